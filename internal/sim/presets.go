package sim

import (
	"fmt"
	"strings"
	"time"
)

// Preset is a named starting point for every model parameter; what a user
// gives on top of it (rsa-lab sim's flags) changes it. A preset describes the
// machine's file system, links, RSA nodes and mover, never the workload:
// the machine and its jobs come from the trace, and the I/O sizes
// (Workload) from the user, as Slurm records none. Presets come from
// Presets and PresetNamed; the zero Preset is none.
type Preset struct {
	Name    string
	Summary string // one line, for rsa-lab sim --help
	// Calibrates says that without a trace rsa-lab sim runs thesis Table
	// 5.2's job on this preset (Calibrate): the thesis' test bed only,
	// the one machine the table was measured on.
	Calibrates bool
	config     func() Config
}

// Config is the preset's parameters.
func (p Preset) Config() Config { return p.config() }

// Presets lists the presets, the default (Defaults) first.
func Presets() []Preset {
	return []Preset{
		{Name: "thesis", config: Defaults,
			Summary: "the thesis' 2011 test bed on the trace's machine: GPFS at 41 MiB/s, 1 GbE links, 16 RSA nodes of 32 GiB, its rsync mover at 39 MiB/s (the default)"},
		{Name: "testbed", config: testbed, Calibrates: true,
			Summary: "thesis, with all RSA traffic through the test bed's one 1 GbE uplink, as the thesis measured it; without TRACE, thesis Table 5.2's job (was --testbed thesis)"},
		{Name: "measured", config: measured, Calibrates: true,
			Summary: "testbed, staged by this project's mover, rsa copy, at the rates docs/performance.md measured (was --testbed measured)"},
		{Name: "modern", config: Modern,
			Summary: "a 2025 university site: a parallel file system of 20 GiB/s (5 GiB/s per client), 100 Gbit/s links, 4 RSA nodes of 1.4 TiB on Gluster, a mover of 3 GiB/s; each number's source in docs/simulator.md"},
	}
}

// PresetNamed returns the preset called name.
func PresetNamed(name string) (Preset, error) {
	var names []string
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("preset %q: want one of %s", name, strings.Join(names, ", "))
}

// testbed is the thesis' proof of concept: Defaults with its RSA traffic
// through one 1 GbE uplink.
func testbed() Config {
	c := Defaults()
	c.RSA.Uplink = thesisUplink()
	return c
}

// measured is the test bed staged by this project's mover, rsa copy, as
// docs/performance.md measured it.
func measured() Config {
	c := testbed()
	c.RSA.StageInRate = thesisBytes / measuredStageIn
	c.RSA.StageOutRate = thesisBytes / measuredStageOut
	c.RSA.StageFileCost = 0 // inside the measured times
	return c
}

// Modern is a 2025 university site: a parallel file system (Lustre or
// GPFS) of ~20 GiB/s, compute and RSA nodes on a 100 Gbit/s fabric, four
// RSA nodes of 1.5 TiB running Gluster (the site of an administrator's
// review of RSA, 4 RSA nodes for 200 compute nodes). Each number says
// where it comes from: a vendor's specification, a published measurement,
// a measurement of this project ("measured here": research notes and
// docs/performance.md, on a 2-core virtual machine, so a lower bound for
// real nodes), or "assumed". The workload, RSA's policy (proportion,
// RSA_DELAY, stage-in lead) and the scheduler stay the defaults: they are
// the site's and the user's.
func Modern() Config {
	c := Defaults()

	// The shared file system.
	// Assumed: a mid-size university Lustre or GPFS; 20 GiB/s is what a
	// site administrator's review of RSA ran rsa-lab sim with.
	c.FS.Bandwidth = 20 * gib
	// Assumed: what one client sustains for a job's buffered I/O, about
	// 40 % of its 100 Gbit/s link (12.5 GB/s line rate). It also caps a
	// compute node's traffic to RSA. Measure yours: IOR on one node.
	c.FS.NodeBandwidth = 5 * gib
	// Published: Dell's white paper "Dell Storage for HPC with Intel
	// Enterprise Edition for Lustre" (Lustre 2.5 era), mdtest file
	// creates on one MDT scale to almost 15,000/s at 240 threads (from
	// 504/s at one). Spinning MDT drives: a lower bound for a 2025 flash
	// MDT.
	c.FS.CreateRate = 15000
	// Assumed: docs/simulator.md's fit to IOR's 2,048 creates on the
	// thesis' GPFS (Table 5.4), far below the 0.15 of its file-per-process
	// storm; no measurement of a current file system's shared-directory
	// collapse at hand.
	c.FS.Contention = 0.0114

	// The RSA nodes.
	// Assumed: that review's site, 4 high-memory RSA nodes for 200
	// compute nodes.
	c.RSA.Nodes = 4
	// Assumed: a node of 1.5 TiB (24 × 64 GiB DIMMs) lends 1.4 TiB and
	// keeps ~100 GiB for the operating system and Gluster's processes
	// (docs/sizing.md).
	c.RSA.RAM = 14 * tib / 10
	// Vendor specification: 100 Gbit/s line rate (InfiniBand HDR100 or
	// 100GbE). Gluster over TCP through FUSE delivers less; measured here
	// only on a 2-core VM (655 MiB/s write through one client, CPU-bound).
	c.RSA.Link = 100e9 / 8
	// Measured here: 20,000 creates in 22.3 s through one Gluster 10.3
	// client of 3 emulated nodes (research notes, ramfs-engines.md §3.4),
	// taken per RSA node; CPU-bound on 2 vCPUs, so a lower bound.
	c.RSA.CreateRate = 900
	// Assumed: one RSA node's mover from the parallel file system into
	// its Gluster volume and back. rsa copy measured 1.4-2.0 GiB/s cold
	// and 3.3 GiB/s warm into local tmpfs on a 2-core VM bound by its
	// disk (docs/performance.md, datasets (a) and (c)); through a Gluster
	// client on a real node it is not measured. At least half the file
	// system's rate per client, so Warnings stays quiet.
	c.RSA.StageInRate = 3 * gib
	c.RSA.StageOutRate = 3 * gib
	// Measured here: 100,000 files staged into a Gluster RAMDISK over 2
	// RSA hosts in 129.1 s (median of 5; docs/performance.md, the table of
	// 2026-12-02): 1.29 ms a file, on 2 cores shared by every host.
	c.RSA.StageFileCost = 1290 * time.Microsecond
	// Measured here: a volume's create, start and mount took ~0.6 s with
	// glusterd running (ramfs-engines.md §3.3); rounded up to 1 s for the
	// bricks and the agents' calls. The cost per node is assumed.
	c.RSA.Boot = Linear{Base: time.Second, PerNode: 100 * time.Millisecond}
	// Measured here: unmount, stop and delete of a 3-node volume, 2.4-2.5 s
	// (ramfs-engines.md §3.3); bricks removed in parallel.
	c.RSA.Destroy = Linear{Base: 2500 * time.Millisecond}
	// Measured here: a FUSE mount took 0.09-0.14 s and a volume option
	// (auth.allow for the job's nodes) 0.22-0.25 s (ramfs-engines.md §3.3).
	c.RSA.Mount = 500 * time.Millisecond
	return c
}

// Testbed returns the preset of rsa-lab sim's older --testbed flag: "thesis"
// is preset testbed, "measured" preset measured.
func Testbed(name string) (Config, error) {
	switch name {
	case "thesis":
		return testbed(), nil
	case "measured":
		return measured(), nil
	}
	return Config{}, fmt.Errorf("testbed %q: want thesis or measured", name)
}
