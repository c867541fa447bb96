package rsatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Slurm is the client side of a Slurm cluster: its slurm.conf, and where
// its commands are.
type Slurm struct {
	Conf string // SLURM_CONF
	// Prefix is the installation whose bin/ holds the cluster's sbatch,
	// squeue, ...; empty, Debian's on $PATH.
	Prefix string
}

// Tool is the path of one of Slurm's commands: the cluster's own under
// Prefix, or name (found on $PATH); any other program is name.
func (s Slurm) Tool(name string) string {
	switch name {
	case "sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun", "sacct":
		if s.Prefix != "" {
			return filepath.Join(s.Prefix, "bin", name)
		}
	}
	return name
}

// Command is name (Tool) with args, run as root in this process's
// environment with the cluster's SLURM_CONF. Once it has exited, or ctx
// is done, its output pipes are given 5 s more, so that a process it left
// behind cannot hold its caller.
func (s Slurm) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Tool(name), args...)
	cmd.Env = s.Env()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Env is this process's environment with the cluster's SLURM_CONF, for a
// command of Slurm's run as root.
func (s Slurm) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+s.Conf)
}

// AsUser is the command line that runs name (Tool) with args as user
// through runuser, which gives it the user's groups as a login would, with
// the cluster's SLURM_CONF; under a Prefix, a PATH that finds the
// cluster's own commands first, since sbatch hands its PATH to the job,
// whose srun must be the cluster's too.
func (s Slurm) AsUser(user, name string, args ...string) []string {
	env := []string{"env", "SLURM_CONF=" + s.Conf}
	if s.Prefix != "" {
		env = append(env, "PATH="+filepath.Join(s.Prefix, "bin")+":/usr/local/bin:/usr/bin:/bin")
	}
	return slices.Concat([]string{"runuser", "-u", user, "--"}, env, []string{s.Tool(name)}, args)
}

// Sbatch submits a batch job as user (AsUser) from the directory dir
// with sbatch --parsable and args, and returns the job's id.
func (s Slurm) Sbatch(ctx context.Context, user, dir string, args ...string) (string, error) {
	argv := s.AsUser(user, "sbatch", append([]string{"--parsable"}, args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch %s as %s: %w\n%s", strings.Join(args, " "), user, err, out)
	}
	return JobID(string(out)), nil
}

// JobID reads the job id from sbatch --parsable's output ("ID" or
// "ID;CLUSTER").
func JobID(parsable string) string {
	id, _, _ := strings.Cut(strings.TrimSpace(parsable), ";")
	return id
}

// Job reads a Slurm job's state and reason (squeue). A job Slurm no longer
// knows has state "" and no error; a slurmctld that does not answer (it
// may be restarting) is an error, never mistaken for a forgotten job.
func (s Slurm) Job(ctx context.Context, id string) (state, reason string, err error) {
	out, err := s.Command(ctx, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T|%r").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "Invalid job id") {
			return "", "", nil
		}
		return "", "", fmt.Errorf("squeue -j %s: %w: %s", id, err, strings.TrimSpace(string(out)))
	}
	state, reason, _ = strings.Cut(strings.TrimSpace(string(out)), "|")
	return state, reason, nil
}

// Span reads when Slurm started a job and when it ended it (squeue's
// StartTime and EndTime, whole seconds): the span Slurm held its nodes
// for, by Slurm's own clock. A job not yet ended is an error.
func (s Slurm) Span(ctx context.Context, id string) (start, end time.Time, err error) {
	out, err := s.Command(ctx, "squeue", "-h", "-t", "all", "-j", id, "-o", "%S|%e").CombinedOutput()
	if err != nil {
		return start, end, fmt.Errorf("squeue -j %s: %w: %s", id, err, strings.TrimSpace(string(out)))
	}
	return parseSpan("squeue", id, strings.TrimSpace(string(out)))
}

// Accounted reads when Slurm's accounting says a job started and ended:
// sacct's Start and End (whole seconds) from the job-completion record
// (sacct --completion: the emulated cluster logs completions with
// jobcomp/filetxt and runs no slurmdbd). A job with no record yet is an
// error.
func (s Slurm) Accounted(ctx context.Context, id string) (start, end time.Time, err error) {
	out, err := s.Command(ctx, "sacct", "--completion", "--noheader", "--parsable2", "--jobs", id, "--format", "Start,End").CombinedOutput()
	if err != nil {
		return start, end, fmt.Errorf("sacct --completion -j %s: %w: %s", id, err, strings.TrimSpace(string(out)))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return start, end, fmt.Errorf("sacct --completion -j %s: no record of the job (not ended, or JobCompType not jobcomp/filetxt?)", id)
	}
	return parseSpan("sacct", id, line)
}

// parseSpan reads START|END, Slurm's times in whole seconds of the local
// zone, as tool printed them for job id; an END that is no time (Unknown)
// is a job not ended.
func parseSpan(tool, id, line string) (start, end time.Time, err error) {
	a, b, _ := strings.Cut(line, "|")
	const layout = "2006-01-02T15:04:05"
	if start, err = time.ParseInLocation(layout, a, time.Local); err != nil {
		return start, end, fmt.Errorf("%s: Slurm job %s's start %q: %w", tool, id, a, err)
	}
	if end, err = time.ParseInLocation(layout, b, time.Local); err != nil {
		return start, end, fmt.Errorf("%s: Slurm job %s's end %q (not ended?): %w", tool, id, b, err)
	}
	return start, end, nil
}

// Ended reports whether a job in state has ended: it will not run (again).
func Ended(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		return true
	}
	return false
}
