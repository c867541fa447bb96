package sim

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// Hand-made traces whose EASY schedules can be worked out on paper. Jobs
// do no I/O, so each holds its nodes exactly its run time.
func TestSchedulerEASY(t *testing.T) {
	tests := []struct {
		name      string
		prio      Priority
		trace     string
		want      map[int64]float64 // job id: start, seconds
		demotions int
	}{
		{
			// 1 runs on 6 of 10 nodes until 100. 2 (8 nodes) is on deck
			// with a reservation at 100, when 2 nodes will be spare. 3
			// backfills on those spare nodes though it runs long; 5 ends
			// before 100 and backfills too; 4 would do neither (the
			// spare nodes are gone) and waits until 2 ends.
			name: "backfill on spare nodes and before the reservation",
			trace: swf(10,
				line(1, 0, 100, 6, -1),
				line(2, 1, 100, 8, -1),
				line(3, 2, 500, 2, -1),
				line(4, 3, 500, 1, -1),
				line(5, 4, 50, 2, -1)),
			want: map[int64]float64{1: 0, 2: 100, 3: 2, 4: 200, 5: 4},
		},
		{
			// The requested time decides, not the run time: 3 would end
			// at 52 in fact, but asks for 200 and so may not delay 2; 4
			// asks for 90 and ends, as far as the scheduler knows, by 93.
			name: "requested time decides",
			trace: swf(4,
				line(1, 0, 100, 2, 100),
				line(2, 1, 10, 4, 10),
				line(3, 2, 50, 2, 200),
				line(4, 3, 50, 2, 90)),
			want: map[int64]float64{1: 0, 2: 100, 3: 110, 4: 3},
		},
		{
			name: "fcfs never demotes",
			trace: swf(4,
				line(1, 0, 100, 4, -1),
				line(2, 1, 1000, 4, -1),
				line(3, 2, 10, 4, -1)),
			want: map[int64]float64{1: 0, 2: 100, 3: 1100},
		},
		{
			// Under SJF the short job 3 overtakes 2, which was on deck:
			// one demotion; 2 is on deck again when 3 starts.
			name: "sjf: a shorter arrival demotes the head",
			prio: SJF,
			trace: swf(4,
				line(1, 0, 100, 4, -1),
				line(2, 1, 1000, 4, -1),
				line(3, 2, 10, 4, -1)),
			want:      map[int64]float64{1: 0, 2: 110, 3: 100},
			demotions: 1,
		},
		{
			name:  "a job that fits starts at once",
			trace: swf(8, line(1, 0, 100, 4, -1), line(2, 5, 100, 4, -1), line(3, 6, 10, 1, -1)),
			want:  map[int64]float64{1: 0, 2: 5, 3: 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := noIO()
			c.Priority = tt.prio
			r := run(t, tt.trace, c)
			if got := starts(r); !maps.Equal(got, tt.want) {
				t.Errorf("starts %v, want %v", got, tt.want)
			}
			if r.Demotions != tt.demotions {
				t.Errorf("%d demotions, want %d", r.Demotions, tt.demotions)
			}
		})
	}
}

// The queue's order: SJF by requested time, ties and FCFS by arrival.
func TestSchedulerQueueOrder(t *testing.T) {
	tests := []struct {
		prio Priority
		want []int64
	}{
		{FCFS, []int64{1, 2, 3, 4}},
		{SJF, []int64{3, 2, 4, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.prio.String(), func(t *testing.T) {
			s := scheduler{prio: tt.prio}
			for i, est := range []int{40, 20, 10, 20} {
				s.submit(&simJob{id: int64(i + 1), seq: int64(i + 1), est: secondsD(est), nodes: 1})
			}
			var got []int64
			for _, j := range s.queue {
				got = append(got, j.id)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("queue %v, want %v", got, tt.want)
			}
		})
	}
}

// Machine size and node conversion from the header; jobs the simulator
// cannot run are skipped and counted.
func TestMachineFromHeader(t *testing.T) {
	tests := []struct {
		name      string
		header    string
		jobs      []string
		nodes     int
		simulated int
		skipped   Skipped
		wantNodes map[int64]int
	}{
		{
			name:   "procs per node from MaxProcs/MaxNodes",
			header: "; MaxNodes: 4\n; MaxProcs: 16\n",
			jobs:   []string{line(1, 0, 10, 16, -1), line(2, 0, 10, 5, -1), line(3, 0, 10, 17, -1)},
			nodes:  4, simulated: 2, skipped: Skipped{TooManyNode: 1},
			wantNodes: map[int64]int{1: 4, 2: 2},
		},
		{
			name:   "one processor is one node without MaxNodes",
			header: "; MaxProcs: 8\n",
			jobs:   []string{line(1, 0, 10, 8, -1), line(2, 0, 0, 1, -1), line(3, 0, -1, 1, -1), line(4, 0, 10, -1, -1)},
			nodes:  8, simulated: 1, skipped: Skipped{NoRunTime: 2, NoProcs: 1},
			wantNodes: map[int64]int{1: 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.header+strings.Join(tt.jobs, ""), noIO())
			if r.Nodes != tt.nodes || r.Jobs != tt.simulated || r.Skipped != tt.skipped {
				t.Errorf("%d nodes, %d jobs, skipped %+v; want %d, %d, %+v", r.Nodes, r.Jobs, r.Skipped, tt.nodes, tt.simulated, tt.skipped)
			}
			got := map[int64]int{}
			for _, g := range r.Gantt {
				got[g.ID] = g.Nodes
			}
			if !maps.Equal(got, tt.wantNodes) {
				t.Errorf("nodes per job %v, want %v", got, tt.wantNodes)
			}
		})
	}
}
