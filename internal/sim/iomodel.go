package sim

import "time"

// The I/O model: what each transfer costs and which shared resource it
// waits on. The shared file system is two pools, its metadata service
// (creates and opens) and its bandwidth; a job's own files on RSA cost
// RAM-backed creates on its RSA nodes and the bytes at their links' speed.

// fsReadSteps: a job opens its input files (which exist: no directory
// lock storm), then reads the bytes through its nodes' links.
func (s *sim) fsReadSteps(j *simJob) []step {
	return []step{
		poolStep(s.mds, float64(j.files), 1, 0),
		poolStep(s.fs, float64(j.in), float64(j.nodes), s.nodeCap(j)),
	}
}

// fsWriteSteps: every process creates its file in the job's output
// directory at once, so each create costs 1+k(C−1) uncontended ones, and
// h(1−1/K) more from K nodes; then the bytes.
func (s *sim) fsWriteSteps(j *simJob) []step {
	c, fs := float64(j.files), s.cfg.FS
	each := 1 + fs.Contention*max(c-1, 0) + fs.HostContention*(1-1/float64(max(j.nodes, 1)))
	return []step{
		poolStep(s.mds, c*each, 1, 0),
		poolStep(s.fs, float64(j.out), float64(j.nodes), s.nodeCap(j)),
	}
}

// ramSteps: the job's files on its RAMDISK. Every RSA node serves
// metadata from RAM (the thesis' PVFS ran a metadata server on each).
func (s *sim) ramSteps(j *simJob, bytes int64) []step {
	meta := durationCeil(float64(j.files) / (float64(max(j.rsaNodes, 1)) * s.cfg.RSA.CreateRate))
	bw := s.rsaBandwidth(j)
	if s.nodeCap(j) > 0 {
		bw = min(bw, s.nodeCap(j))
	}
	if s.uplink != nil {
		return []step{delayStep(meta), poolStep(s.uplink, float64(bytes), float64(j.nodes), bw)}
	}
	return []step{delayStep(meta), delayStep(durationCeil(float64(bytes) / bw))}
}

// stageInSteps: the movers on the job's RSA nodes read its input files
// from the shared file system into RAM.
func (s *sim) stageInSteps(j *simJob, bytes int64) []step {
	r := s.cfg.RSA
	movers := float64(j.rsaNodes)
	return []step{
		delayStep(time.Duration(j.files) * r.StageFileCost),
		poolStep(s.mds, float64(j.files), 1, 0),
		poolStep(s.fs, float64(bytes), movers, min(movers*r.StageInRate, s.rsaBandwidth(j))),
	}
}

// stageOutSteps: the movers write the output from RAM to the shared file
// system. One mover creates the files one after another, so there is no
// directory lock storm: the point of staging out (thesis §5.2.2).
func (s *sim) stageOutSteps(j *simJob) []step {
	if j.outRAM == 0 {
		return nil
	}
	r := s.cfg.RSA
	movers := float64(j.rsaNodes)
	return []step{
		delayStep(r.StageOutFixed + time.Duration(j.files)*r.StageFileCost),
		poolStep(s.mds, float64(j.files), 1, 0),
		poolStep(s.fs, float64(j.outRAM), movers, min(movers*r.StageOutRate, s.rsaBandwidth(j))),
	}
}

// nodeCap is what j's compute nodes' links carry together; 0: no limit.
func (s *sim) nodeCap(j *simJob) float64 {
	return s.cfg.FS.NodeBandwidth * float64(j.nodes)
}

// rsaBandwidth is the RSA links' speed a job gets: each node's link in
// proportion to the RAM the job holds there (whole nodes by proportion:
// the full links).
func (s *sim) rsaBandwidth(j *simJob) float64 {
	var bw float64
	for _, p := range j.parts {
		bw += s.cfg.RSA.Link * float64(p.Bytes) / float64(s.cfg.RSA.RAM)
	}
	return max(bw, 1)
}
