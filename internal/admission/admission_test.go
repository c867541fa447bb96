package admission

import (
	"errors"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/refuse"
)

// The checks that need no file system: each refusal is invalid and names
// the problem. The directory and program checks, which run as the user,
// are tested through rsa serve (test/e2e: TestBadInputRefused and the
// project directory tests).
func TestValidateRefusals(t *testing.T) {
	c := &Checker{Config: &config.Config{
		Nodes:  []config.Node{{Name: "rsa1", Capacity: 8 << 30}},
		Limits: config.Limits{MaxJobCapacity: 4 << 30},
	}, Engine: "gluster"}
	type check func(*job.Spec, *asuser.Identity) error
	for _, tc := range []struct {
		name  string
		check check
		spec  job.Spec
		want  string
	}{
		{"nothing", c.Validate, job.Spec{}, "nothing to accelerate"},
		{"control character", c.Validate, job.Spec{Input: "/in\n/etc"}, "input directory"},
		{"tiny capacity", c.Validate, job.Spec{StageIn: "unpack", Capacity: 1 << 10}, "below the 1M minimum"},
		{"over the job limit", c.Validate, job.Spec{StageIn: "unpack", Capacity: 5 << 30}, "limits.max_job_capacity"},
		{"image without input", c.modes, job.Spec{Output: "/o", InputMode: job.InputImage}, "input=image makes an image"},
		{"unknown input mode", c.modes, job.Spec{Output: "/o", InputMode: "zip"}, `input mode "zip"`},
		{"private without the engine's support", c.modes, job.Spec{Output: "/o", OutputMode: job.OutputPrivate}, "engine gluster cannot have output of their own"},
		{"input inside output", c.modes, job.Spec{Input: "/o/in", Output: "/o"}, "must be separate directories"},
		{"pack as stage-in", c.programs, job.Spec{StageIn: "pack", Output: "/o"}, "'pack' is a stage-out mode"},
		{"relative program", c.programs, job.Spec{StageIn: "bin/stage", Output: "/o"}, "clean absolute path"},
		{"stage-out program without output", c.programs, job.Spec{StageOut: "pack"}, "needs an output directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			err := tc.check(&s, nil)
			if !errors.Is(err, refuse.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v; want invalid, saying %q", err, tc.want)
			}
		})
	}
}

func TestNestedAndOwn(t *testing.T) {
	c := &Checker{Config: &config.Config{RamdiskRoot: "/run/rsa/ramdisk", StateDir: "/var/lib/rsa", Socket: "/run/rsa/rsa.sock"}}
	for _, tc := range []struct {
		path string
		own  bool
	}{
		{"/scratch/in", false},
		{"/run/rsa", true},          // holds the RAMDISKs and the socket
		{"/var/lib/rsa/logs", true}, // inside the state
		{"/var/lib/rsa2", false},    // a prefix of the name is not a parent
	} {
		if _, got := c.overlapsOwn(tc.path); got != tc.own {
			t.Errorf("overlapsOwn(%s) = %v, want %v", tc.path, got, tc.own)
		}
	}
	if !nested("/a/b", "/a") || !nested("/a", "/a") || nested("/a/b", "/a/bc") {
		t.Error("nested is wrong")
	}
}

func TestDescribe(t *testing.T) {
	got := Describe(job.Spec{SchedulerID: "42", Input: "/in", InputMode: job.InputImage, ComputeNodes: 2, Capacity: 1 << 30})
	for _, want := range []string{"slurm_job=42", "in=/in", "input=image", "compute_nodes=2", "capacity=1.0G"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, lacks %q", got, want)
		}
	}
}
