// Package sim is a trace-driven simulator of a batch machine with and
// without RSA. A discrete-event clock drives a FCFS/EASY-backfill
// scheduler over a Standard Workload Format trace, an I/O model of the
// shared file system and the RSA nodes, and RSA's own lifecycle machine
// (lifecycle.Step) and allocation planner (alloc.Plan), unchanged: every
// rsa-state a simulated job passes through is one the daemon would take
// on the same events.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// simJob is one job while the simulator needs it: queued, running, or
// still holding RSA capacity. Nothing is kept after that but its share of
// the totals (and its timeline, inside the Gantt window).
type simJob struct {
	id    int64
	seq   int64 // arrival order
	nodes int
	files int
	in    int64 // bytes read at start
	out   int64 // bytes written at the end

	submit time.Duration
	run    time.Duration // computation, from the trace
	est    time.Duration // what the scheduler believes
	start  time.Duration
	phase  phase

	// RSA.
	tracked    bool  // known to the lifecycle machine
	met        int64 // the order RSA met the job in, as the daemon numbers its jobs
	m          lifecycle.Job
	parts      []job.Part
	rsaNodes   int
	capacity   int64
	waiting    bool          // Plan said Wait; retried when capacity comes free
	tickAt     time.Duration // a tick is scheduled for the stage-in time
	ineligible bool          // counted once in Result.Ineligible
	notBefore  time.Duration // no stage-in before this (stage_in_lead); 0: none
	shadow     time.Duration // the scheduler's reservation while on deck
	stageIn    *transfer
	readRAM    bool
	outRAM     int64 // bytes written to RAM, to stage out
	onDeck     bool  // has been on deck

	g *GanttJob
}

type phase uint8

const (
	queued phase = iota
	mountWait
	reading
	computing
	writing
	ended
)

// sim is one run's state.
type sim struct {
	cfg   Config
	jobs  jobSource // the trace's jobs, in submit order
	hdr   Header    // the trace's header
	err   error     // reading the trace failed
	clock clock
	epoch time.Time
	sched scheduler
	nodes int

	fs, mds, uplink *pool

	// RSA, when cfg.RSA.Nodes > 0.
	rsa      bool
	policy   alloc.Policy
	rsaList  []config.Node
	used     map[string]int64
	held     int64
	waiting  []*simJob // in the order RSA met them
	met      int64     // jobs RSA met so far
	retrying bool
	onDeck   *simJob

	passDue bool
	seq     int64
	first   time.Duration // first submit
	last    time.Duration // last job end
	drained time.Duration // last RAMDISK released

	busyNodes int
	busy      *series
	ram       *series
	res       Result

	sumWait, sumBSLD float64
	gantt            []*GanttJob
	gantted          int
}

// Run simulates the SWF trace read from trace under cfg. It streams the
// trace: memory grows with the jobs queued or running at once, not with
// the trace's length.
func Run(ctx context.Context, trace io.Reader, cfg Config) (*Result, error) {
	began := time.Now()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rd, err := NewReader(trace)
	if err != nil {
		return nil, err
	}
	if !rd.havePen {
		return nil, errors.New("the trace has no job lines, nothing to simulate: an SWF trace has one line of 18 fields per job after its ';' header comments")
	}
	return simulate(ctx, began, rd.Header, rd, cfg)
}

// jobSource gives a trace's jobs in submit order, io.EOF after the last:
// the SWF Reader, or a Trace held in memory.
type jobSource interface {
	Next() (TraceJob, error)
}

// simulate runs the jobs of src under cfg, which check has accepted.
func simulate(ctx context.Context, began time.Time, h Header, src jobSource, cfg Config) (*Result, error) {
	s, err := newSim(cfg, h)
	if err != nil {
		return nil, err
	}
	s.jobs, s.hdr = src, h
	if err := s.loop(ctx); err != nil {
		return nil, err
	}
	if sk := s.res.Skipped; s.res.Jobs == 0 {
		return nil, fmt.Errorf("no job of the trace could be simulated: %d skipped (run time <= 0: %d, processors unknown: %d, more nodes than the machine's %d: %d); check the trace, --nodes and --procs-per-node",
			sk.Total(), sk.NoRunTime, sk.NoProcs, s.nodes, sk.TooManyNode)
	}
	res := s.finish()
	res.Elapsed = time.Since(began).Seconds()
	return res, nil
}

func newSim(cfg Config, h Header) (*sim, error) {
	nodes := cfg.Nodes
	if nodes == 0 {
		switch {
		case h.MaxNodes > 0:
			nodes = h.MaxNodes
		case h.MaxProcs > 0:
			nodes = h.MaxProcs / cfg.ppn(h)
		}
	}
	if nodes <= 0 && h.MaxNodes == 0 && h.MaxProcs > 0 {
		return nil, fmt.Errorf("%d processors per node is more than the trace's MaxProcs of %d, which leaves no node: give a smaller --procs-per-node, or --nodes", cfg.ppn(h), h.MaxProcs)
	}
	if nodes <= 0 {
		return nil, errors.New("the trace's header gives neither MaxNodes nor MaxProcs: give the machine's size with --nodes")
	}
	s := &sim{
		cfg:   cfg,
		epoch: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		nodes: nodes,
		fs:    &pool{capacity: cfg.FS.Bandwidth},
		mds:   &pool{capacity: cfg.FS.CreateRate},
		busy:  newSeries(),
		ram:   newSeries(),
		first: -1,
	}
	s.sched = scheduler{free: nodes, prio: cfg.Priority}
	s.res.Nodes = nodes
	if r := cfg.RSA; r.Nodes > 0 {
		s.rsa = true
		s.res.RSA = true
		s.policy = alloc.Policy{Proportion: r.Proportion, MinJobNodes: r.minJobNodes()}
		for i := range r.Nodes {
			s.rsaList = append(s.rsaList, config.Node{Name: fmt.Sprintf("rsa%03d", i+1), Engine: "sim", Capacity: r.RAM})
		}
		s.used = make(map[string]int64, r.Nodes)
		s.res.RAMTotal = int64(r.Nodes) * r.RAM
		if r.Uplink > 0 {
			s.uplink = &pool{capacity: r.Uplink}
		}
	}
	return s, nil
}

// ppn is processors per node: the flag's, else the header's.
func (c Config) ppn(h Header) int {
	if c.ProcsPerNode > 0 {
		return c.ProcsPerNode
	}
	return h.ProcsPerNode()
}

func (s *sim) loop(ctx context.Context) error {
	s.next()
	for s.err == nil {
		e, ok := s.clock.pop()
		if !ok {
			break
		}
		e.fn()
		if s.clock.ran&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return s.err
}

// next reads the next job and schedules its arrival: one arrival is
// pending at a time, so the trace is read as the clock reaches it.
func (s *sim) next() {
	j, err := s.read()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			s.err = err
		}
		return
	}
	s.clock.at(j.submit, event{fn: func() {
		s.next() // first, so that jobs submitted together share one pass
		s.submit(j)
	}})
}

// read returns the next job the simulator can run, counting the others.
func (s *sim) read() (*simJob, error) {
	ppn := s.cfg.ppn(s.hdr)
	for {
		t, err := s.jobs.Next()
		if err != nil {
			return nil, err
		}
		nodes := t.Nodes
		if nodes <= 0 {
			nodes = (t.Procs + ppn - 1) / ppn
		}
		switch {
		case t.Run <= 0:
			s.res.Skipped.NoRunTime++
			continue
		case nodes <= 0:
			s.res.Skipped.NoProcs++
			continue
		case nodes > s.nodes:
			s.res.Skipped.TooManyNode++
			continue
		}
		est := estimate(t, s.cfg.EstimateFactor)
		s.seq++
		j := &simJob{id: t.ID, seq: s.seq, nodes: nodes, submit: t.Submit, run: t.Run, est: est,
			files: nodes * s.cfg.Workload.FilesPerNode}
		s.sizes(j)
		if t.Input > 0 {
			j.in = t.Input // recorded, not drawn
			j.files = nodes * s.cfg.Workload.FilesPerNode
		}
		return j, nil
	}
}

// sizes draws j's bytes: from a source seeded by the run's seed and the
// job, so that runs with and without RSA see the same workload.
func (s *sim) sizes(j *simJob) {
	w := s.cfg.Workload
	var r *rand.Rand
	if w.Input.random() || w.Output.random() {
		r = rand.New(rand.NewPCG(s.cfg.Seed, uint64(j.seq)))
	}
	j.in = w.Input.draw(r) * int64(j.nodes)
	j.out = w.Output.draw(r) * int64(j.nodes)
	if j.in == 0 && j.out == 0 {
		j.files = 0
	}
}

// submit queues an arriving job and asks for a scheduling pass.
func (s *sim) submit(j *simJob) {
	if s.first < 0 {
		s.first = j.submit
	}
	s.res.Jobs++
	if w := s.cfg.Gantt; w.Count > 0 && s.gantted < w.Count && j.id >= w.First {
		s.gantted++
		j.g = &GanttJob{ID: j.id, Nodes: j.nodes, Submit: secs(j.submit)}
		s.gantt = append(s.gantt, j.g)
	}
	s.sched.submit(j)
	s.pass()
}

// pass asks for one scheduling pass after everything else due now, as a
// batch system schedules once per batch of submissions and completions.
func (s *sim) pass() {
	if s.passDue {
		return
	}
	s.passDue = true
	s.clock.after(0, s.schedule)
}

func (s *sim) schedule() {
	s.passDue = false
	head, shadow := s.sched.pass(s.clock.now, s.startJob)
	old := s.onDeck
	if head == old {
		if head != nil {
			s.refresh(head, shadow)
		}
		return
	}
	s.onDeck = head
	if old != nil && old.phase == queued {
		s.res.Demotions++
		s.demote(old)
	}
	if head != nil {
		if !head.onDeck {
			head.onDeck = true
			s.res.OnDeck++
		}
		head.shadow = shadow
		s.promote(head)
	}
}

// wall is the lifecycle's time for a simulated instant. The epoch is not
// the zero time, which the machine reads as "not started".
func (s *sim) wall(t time.Duration) time.Time { return s.epoch.Add(t) }

// finish turns the totals into the result.
func (s *sim) finish() *Result {
	r := &s.res
	r.Events = s.clock.ran
	if r.Jobs == 0 {
		return r
	}
	span := s.last - s.first
	r.Makespan = secs(span)
	if span > 0 {
		capacity := float64(s.nodes) * span.Hours()
		r.Utilisation = r.NodeHours / capacity
		r.UsefulUtil = r.ComputeNodeHours / capacity
	}
	r.MeanWait = s.sumWait / float64(r.Jobs)
	r.MeanBoundedSlowdown = s.sumBSLD / float64(r.Jobs)
	r.ShareWithRSA = float64(r.JobsWithRSA) / float64(r.Jobs)
	end := max(s.last, s.drained)
	s.ram.integrate(end)
	if end > s.first {
		r.RAMMean = s.ram.total / (end - s.first).Seconds()
	}
	r.RAMPeak = int64(s.ram.peak)
	r.Drained = secs(s.drained)
	r.Busy = s.busy.points(s.last)
	r.RAM = s.ram.points(end)
	for _, g := range s.gantt {
		r.Gantt = append(r.Gantt, *g)
	}
	return r
}
