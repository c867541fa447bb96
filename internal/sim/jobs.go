package sim

import (
	"time"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// A job on its nodes: it reads its input, computes for its trace run
// time, writes its output, and leaves. Its reads and writes go to RAM
// when RSA's state says the RAMDISK is mounted at that moment, else to
// the shared file system, sharing it with everyone doing I/O then.

// bsldThreshold is bounded slowdown's lower bound on the run time, so that
// very short jobs do not dominate the mean.
const bsldThreshold = 10 * time.Second

// startJob gives j the nodes the scheduler counted for it.
func (s *sim) startJob(j *simJob) {
	now := s.clock.now
	s.busyNodes += j.nodes
	s.busy.set(now, float64(s.busyNodes))
	if j.g != nil {
		j.g.Start = secs(now)
	}
	s.started(j)
	if a, _ := lifecycle.Work(j.m.RSA); j.tracked && a == lifecycle.MountIn {
		// The input is staged and being mounted over the job's input
		// directory: the job reads RAM once the mount is made (the
		// prolog makes it before the job's first instruction, App. K).
		j.readRAM = true
		j.phase = mountWait
		return
	}
	s.readInput(j)
}

// readInput runs the read phase.
func (s *sim) readInput(j *simJob) {
	j.phase = reading
	var steps []step
	if j.in > 0 {
		if j.readRAM {
			steps = s.ramSteps(j, j.in)
		} else {
			steps = s.fsReadSteps(j)
		}
	}
	s.start(&transfer{steps: steps, done: func() { s.compute(j) }})
}

func (s *sim) compute(j *simJob) {
	if j.g != nil {
		j.g.ReadEnd = secs(s.clock.now)
	}
	j.phase = computing
	s.clock.after(j.run, func() { s.writeOutput(j) })
}

// writeOutput runs the write phase: to RAM if the RAMDISK is mounted at
// the output path now and holds the output, else to the shared FS.
func (s *sim) writeOutput(j *simJob) {
	if j.g != nil {
		j.g.ComputeEnd = secs(s.clock.now)
	}
	j.phase = writing
	toRAM := false
	if j.out > 0 && j.tracked && lifecycle.PhaseOf(j.m.RSA) == lifecycle.PhaseInUseOut {
		if j.out <= j.capacity {
			toRAM = true
		} else {
			s.res.OutputTooLarge++
		}
	}
	var steps []step
	switch {
	case j.out == 0:
	case toRAM:
		steps = s.ramSteps(j, j.out)
	default:
		steps = s.fsWriteSteps(j)
	}
	s.start(&transfer{steps: steps, done: func() {
		if toRAM {
			j.outRAM = j.out
		}
		s.endJob(j)
	}})
}

// endJob frees j's nodes and counts it.
func (s *sim) endJob(j *simJob) {
	now := s.clock.now
	j.phase = ended
	s.sched.end(j)
	s.busyNodes -= j.nodes
	s.busy.set(now, float64(s.busyNodes))
	s.last = max(s.last, now)

	hold, wait := now-j.start, j.start-j.submit
	n := float64(j.nodes)
	s.res.NodeHours += n * hold.Hours()
	s.res.ComputeNodeHours += n * j.run.Hours()
	s.res.IONodeHours += n * (hold - j.run).Hours()
	s.sumWait += wait.Seconds()
	// Bounded slowdown as the literature defines it (Feitelson et al.):
	// the run time is the time the job held its nodes, I/O included.
	s.sumBSLD += max(1, (wait+hold).Seconds()/max(hold, bsldThreshold).Seconds())
	if j.readRAM {
		s.res.InputFromRAM++
	}
	if j.outRAM > 0 {
		s.res.OutputToRAM++
	}
	if j.readRAM || j.outRAM > 0 {
		s.res.JobsWithRSA++
	}
	if j.g != nil {
		j.g.End = secs(now)
		j.g.ReadRAM, j.g.WriteRAM = j.readRAM, j.outRAM > 0
	}
	s.finished(j)
	s.pass()
}
