package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// rsaConfig is a small machine where times are easy to follow: the shared
// file system and the RSA links are so fast that jobs' own I/O takes no
// time to speak of, while stage-in is slow (1 MiB/s per RSA node),
// RAMDISKs take 12 s to build, 2 s to destroy, 1 s to mount.
func rsaConfig() Config {
	c := Defaults()
	c.Workload = Workload{Input: Fixed(16 * mib), Output: Fixed(mib), FilesPerNode: 0}
	c.FS = SharedFS{Bandwidth: 1e15, CreateRate: 1e9}
	c.RSA.Nodes = 8
	c.RSA.Link = 1e15
	c.RSA.Proportion = 1
	c.RSA.StageInRate = mib
	c.RSA.StageFileCost = 0
	c.RSA.StageInLead = 0
	c.RSA.Boot = Linear{Base: 12 * time.Second}
	c.RSA.Destroy = Linear{Base: 2 * time.Second}
	c.RSA.Mount = time.Second
	c.Gantt = GanttWindow{Count: 10}
	return c
}

func TestLateStageIn(t *testing.T) {
	tests := []struct {
		name     string
		firstRun int // job 1's run time: when job 2 starts
		late     int
		readRAM  bool
		path     []string // job 2's applied events, with the state each left
	}{
		{
			// Job 2 is on deck at 1 s: built by 13 s, staged in (64 MiB
			// at 4 × 1 MiB/s) by 29 s. Job 1 ends at 15 s: job 2 starts
			// while staging, reads from the shared FS, and its RAMDISK
			// is rebuilt for output (App. A l.209-217).
			name: "started before the stage-in ended", firstRun: 15, late: 1,
			path: []string{
				"tick>ONDECK/INITIAL",
				"assigned>ONDECK/BOOTING",
				"booted>ONDECK/STAGING_IN",
				"started>RUNNING/STOPPING_STAGING_IN",
				"stage-in-stopped>RUNNING/TEARDOWN",
				"destroyed>RUNNING/BOOTING",
				"booted>RUNNING/MOUNTING",
				"mounted>RUNNING/INUSE_OUT",
				"finished>FINISHED/STAGING_OUT",
				"staged-out>FINISHED/TEARDOWN",
				"destroyed>FINISHED/RELEASED",
			},
		},
		{
			// Job 1 ends at 40 s: the input is READY, mounted at the start;
			// the switch to output comes RSA_DELAY (300 s) after it.
			name: "staged in time", firstRun: 40, readRAM: true,
			path: []string{
				"tick>ONDECK/INITIAL",
				"assigned>ONDECK/BOOTING",
				"booted>ONDECK/STAGING_IN",
				"staged-in>ONDECK/READY",
				"started>RUNNING/MOUNTING_IN",
				"mounted>RUNNING/INUSE_IN",
				"tick>RUNNING/UNMOUNTING",
				"unmounted>RUNNING/TEARDOWN",
				"destroyed>RUNNING/BOOTING",
				"booted>RUNNING/MOUNTING",
				"mounted>RUNNING/INUSE_OUT",
				"finished>FINISHED/STAGING_OUT",
				"staged-out>FINISHED/TEARDOWN",
				"destroyed>FINISHED/RELEASED",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rsaConfig()
			rec := recorder{}
			c.Observe = rec.observe
			r := run(t, swf(4, line(1, 0, tt.firstRun, 4, -1), line(2, 1, 1000, 4, -1)), c)
			if got := rec.path(2); !slices.Equal(got, tt.path) {
				t.Errorf("job 2's lifecycle\n got %q\nwant %q", got, tt.path)
			}
			if r.LateStageIns != tt.late {
				t.Errorf("%d late stage-ins, want %d", r.LateStageIns, tt.late)
			}
			g := r.Gantt[1]
			if g.ReadRAM != tt.readRAM || !g.WriteRAM {
				t.Errorf("job 2 read RAM %v, wrote RAM %v; want %v, true", g.ReadRAM, g.WriteRAM, tt.readRAM)
			}
			if len(g.StageIn) != 1 || g.StageIn[0].From != 13 {
				t.Fatalf("job 2's stage-ins %v, want one from 13 s", g.StageIn)
			}
			if end, want := g.StageIn[0].To, min(29, g.Start); end != want {
				t.Errorf("job 2's stage-in ended at %g s, want %g", end, want)
			}
		})
	}
}

// Under SJF, job 2 is on deck and staging when the shorter job 3 arrives
// and takes its place: job 2 is demoted while staging, its stage-in
// stopped and its RSA nodes released (App. A l.72-120). On deck again
// when job 3 starts at 100 s, it starts over; but job 1's RAMDISK is
// still being staged out and job 3 holds the rest, so it waits for
// capacity until job 1's is released (the tick), and starts at 111 s
// (job 3 waited 1 s for its input mount) with its RAMDISK still being
// built.
func TestDemotedWhileStaging(t *testing.T) {
	c := rsaConfig()
	c.Priority = SJF
	rec := recorder{}
	c.Observe = rec.observe
	r := run(t, swf(4, line(1, 0, 100, 4, -1), line(2, 1, 1000, 4, -1), line(3, 20, 10, 4, -1)), c)
	if r.Demotions != 1 || r.LateStageIns != 1 {
		t.Errorf("%d demotions, %d late stage-ins; want 1, 1", r.Demotions, r.LateStageIns)
	}
	want := []string{
		"tick>ONDECK/INITIAL",
		"assigned>ONDECK/BOOTING",
		"booted>ONDECK/STAGING_IN",
		"demoted>DEMOTED/STOPPING_STAGING_IN",
		"stage-in-stopped>DEMOTED/TEARDOWN",
		"destroyed>DEMOTED/RELEASED",
		"on-deck>ONDECK/INITIAL",
		"tick>ONDECK/INITIAL",
		"assigned>ONDECK/BOOTING",
		"started>RUNNING/BOOTING",
		"booted>RUNNING/MOUNTING",
		"mounted>RUNNING/INUSE_OUT",
		"finished>FINISHED/STAGING_OUT",
		"staged-out>FINISHED/TEARDOWN",
		"destroyed>FINISHED/RELEASED",
	}
	if got := rec.path(2); !slices.Equal(got, want) {
		t.Errorf("job 2's lifecycle\n got %q\nwant %q", got, want)
	}
	at := func(kind string) []float64 {
		var ts []float64
		for _, s := range rec[2] {
			if string(s.ev.Kind) == kind && !s.out.Ignored {
				ts = append(ts, math.Round(secsOf(s.ev.At)*1000)/1000) // to the ms: I/O takes a few ns
			}
		}
		return ts
	}
	if got := at("demoted"); !slices.Equal(got, []float64{20}) {
		t.Errorf("job 2 demoted at %v s, want [20] (job 3's arrival)", got)
	}
	if got := at("on-deck"); !slices.Equal(got, []float64{100}) {
		t.Errorf("job 2 on deck again at %v s, want [100] (job 3's start)", got)
	}
	if got := at("started"); !slices.Equal(got, []float64{111}) {
		t.Errorf("job 2 started at %v s, want [111]", got)
	}
	if g := r.Gantt[1]; len(g.StageIn) != 1 || g.StageIn[0] != (Span{13, 20}) || g.ReadRAM {
		t.Errorf("job 2: stage-ins %v, read RAM %v; want [{13 20}], false", g.StageIn, g.ReadRAM)
	}
}
