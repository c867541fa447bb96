package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Client reads Slurm's view of jobs through squeue and scontrol. It is
// never called from a hook that runs inside slurmctld (job_process, pools,
// paths): those must answer without calling back into Slurm.
type Client struct {
	Bin string // directory of squeue and scontrol; "" for $PATH
}

// Job is one line of squeue.
type Job struct {
	ID       string
	State    string // PENDING, RUNNING, COMPLETING, COMPLETED, CANCELLED, ...
	Reason   string // for pending jobs: Resources, Priority, ...
	Nodes    int
	NodeList string
	Start    time.Time // expected or actual start; zero if unknown
	UID      uint32
	GID      uint32
}

// Pending reports a job that waits for its turn.
func (j Job) Pending() bool { return j.State == "PENDING" }

// Running reports a job that holds its compute nodes and runs.
func (j Job) Running() bool { return j.State == "RUNNING" || j.State == "CONFIGURING" }

// Ended reports a job that no longer runs and never will again (a
// COMPLETING job has ended; Slurm is cleaning its nodes).
func (j Job) Ended() bool { return !j.Pending() && !j.Running() && j.State != "SUSPENDED" }

// ErrNoJob is returned when Slurm does not know the job (any more).
var ErrNoJob = errors.New("no such Slurm job")

// %A, not %i: the unique numeric id, also for a job array's tasks (for
// which %i says "123_4"); it is the id Slurm gives the hooks and prologs.
// unknownStart: Slurm puts the expected start of a job it cannot place
// (its nodes are down, or every job ahead has no time limit) a year ahead.
// That is no estimate; RSA stages such a job as soon as it is on deck.
const unknownStart = 300 * 24 * time.Hour

const squeueFormat = "%A|%T|%r|%D|%N|%S|%U|%G"

func (c Client) cmd(ctx context.Context, name string, args ...string) ([]byte, error) {
	if c.Bin != "" {
		name = filepath.Join(c.Bin, name)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Jobs lists every job squeue shows, of every state.
func (c Client) Jobs(ctx context.Context) ([]Job, error) {
	out, err := c.cmd(ctx, "squeue", "-h", "-a", "-t", "all", "-o", squeueFormat)
	if err != nil {
		return nil, err
	}
	return parseSqueue(out)
}

// ByID indexes jobs by their id.
func ByID(jobs []Job) map[string]Job {
	m := make(map[string]Job, len(jobs))
	for _, j := range jobs {
		m[j.ID] = j
	}
	return m
}

// Job reads one job.
func (c Client) Job(ctx context.Context, id string) (Job, error) {
	if err := CheckID(id); err != nil {
		return Job{}, err
	}
	out, err := c.cmd(ctx, "squeue", "-h", "-a", "-t", "all", "-j", id, "-o", squeueFormat)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return Job{}, ErrNoJob
		}
		return Job{}, err
	}
	js, err := parseSqueue(out)
	if err != nil {
		return Job{}, err
	}
	for _, j := range js {
		if j.ID == id {
			return j, nil
		}
	}
	return Job{}, ErrNoJob
}

// IdleNodes counts the nodes that could take a job now, in any partition:
// idle ones, and partly used ones (mixed), which may have room for it. It
// errs towards "free": a job it calls due is staged in at once, which
// costs RAM early, where the other error would delay the job.
func (c Client) IdleNodes(ctx context.Context) (int, error) {
	out, err := c.cmd(ctx, "sinfo", "--noheader", "--Node", "--states=idle,mixed", "--format=%N")
	if err != nil {
		return 0, err
	}
	return countNodes(out), nil
}

// countNodes counts the distinct names of sinfo --Node's lines: a node in
// two partitions has a line in each.
func countNodes(out []byte) int {
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		if name := strings.TrimSpace(line); name != "" {
			seen[name] = true
		}
	}
	return len(seen)
}

// Comment sets a job's comment, where its user sees why RSA did not take
// it (polling cannot refuse a job at submission).
func (c Client) Comment(ctx context.Context, id, text string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	_, err := c.cmd(ctx, "scontrol", "update", "JobId="+id, "Comment="+text)
	return err
}

// Script returns a batch job's script.
func (c Client) Script(ctx context.Context, id string) ([]byte, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	return c.cmd(ctx, "scontrol", "write", "batch_script", id, "-")
}

// CheckID refuses anything but a numeric job id before it reaches a Slurm
// command line.
func CheckID(id string) error {
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return fmt.Errorf("%q is not a Slurm job id", id)
	}
	return nil
}

func parseSqueue(out []byte) ([]Job, error) {
	var js []Job
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 8 {
			return nil, fmt.Errorf("unexpected squeue line %q", line)
		}
		j := Job{ID: f[0], State: f[1], Reason: f[2], NodeList: f[4]}
		if j.NodeList == "(null)" {
			j.NodeList = ""
		}
		j.Nodes, _ = strconv.Atoi(f[3])
		if t, err := time.ParseInLocation("2006-01-02T15:04:05", f[5], time.Local); err == nil && time.Until(t) < unknownStart {
			j.Start = t
		}
		uid, err1 := strconv.ParseUint(f[6], 10, 32)
		gid, err2 := strconv.ParseUint(f[7], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("unexpected squeue ids in %q", line)
		}
		j.UID, j.GID = uint32(uid), uint32(gid)
		js = append(js, j)
	}
	return js, nil
}

// Version is the Slurm release scontrol reports ("slurm 22.05.8"), as its
// major and minor numbers.
func (c Client) Version(ctx context.Context) (major, minor int, err error) {
	out, err := c.cmd(ctx, "scontrol", "--version")
	if err != nil {
		return 0, 0, err
	}
	return ParseVersion(string(out))
}

// ParseVersion reads "slurm 22.05.8" (or "slurm-wlm 22.05.8").
func ParseVersion(s string) (major, minor int, err error) {
	f := strings.Fields(s)
	if len(f) == 2 {
		parts := strings.Split(f[1], ".")
		if len(parts) >= 2 {
			a, err1 := strconv.Atoi(parts[0])
			b, err2 := strconv.Atoi(parts[1])
			if err1 == nil && err2 == nil {
				return a, b, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("cannot read a Slurm version from %q", strings.TrimSpace(s))
}

// AdminComment is a job's AdminComment, which only root and SlurmUser may
// set, so that a job's user cannot forge what it says.
func (c Client) AdminComment(ctx context.Context, id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	out, err := c.cmd(ctx, "squeue", "--noheader", "--jobs="+id, "--Format=admin_comment:"+strconv.Itoa(maxAdminComment))
	if err != nil {
		return "", err
	}
	// squeue prints a job without one as glibc's printf prints NULL.
	if c := strings.TrimSpace(string(out)); c != "(null)" {
		return c, nil
	}
	return "", nil
}

// SetAdminComment replaces a job's AdminComment. Slurm takes it while the
// job is pending, running or suspended, not once it is completing; it
// reaches slurmdbd with the job's completion.
func (c Client) SetAdminComment(ctx context.Context, id, text string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	_, err := c.cmd(ctx, "scontrol", "update", "JobId="+id, "AdminComment="+text)
	return err
}

// maxAdminComment bounds the AdminComment read back: squeue pads or cuts
// a field to its width.
const maxAdminComment = 4096
