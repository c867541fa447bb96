// Package job defines the record RSA keeps for each job: what the user asked
// for (Spec), who asked (the peer's credentials), and where the lifecycle
// stands. It is shared by the store, the daemon and the API; it holds no
// behaviour beyond small derived views.
package job

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Spec is what a job asks of RSA (the thesis' RSA_* variables, App. R and U).
type Spec struct {
	SchedulerID string        `json:"name,omitempty"`      // the scheduler's id, e.g. a Slurm job id
	Input       string        `json:"input,omitempty"`     // RSA_DATA_IN: staged into RAM, served here
	Output      string        `json:"output,omitempty"`    // RSA_DATA_OUT: served from RAM, staged back here
	StageIn     string        `json:"stage_in,omitempty"`  // RSA_STAGE_IN: program run as the user with $1=RAMDISK $2=input
	StageOut    string        `json:"stage_out,omitempty"` // RSA_STAGE_OUT: program run as the user with $1=RAMDISK $2=output
	Delay       time.Duration `json:"delay"`               // RSA_DELAY: input-to-output switch after start
	Capacity    int64         `json:"capacity,omitempty"`  // explicit RAM request, bytes; 0: by proportion
	// Sized says how RSA chose Capacity when the job gave none (scheduler
	// "none": its input's size plus output_headroom), or why it could not.
	Sized        string `json:"sized,omitempty"`
	ComputeNodes int    `json:"compute_nodes"` // compute nodes the job runs on
	// Pool is the Slurm burst buffer pool that accounts Capacity; Slurm
	// then counts this job's RAM itself.
	Pool string `json:"pool,omitempty"`
	// InputMode is how the input reaches the job (InputFiles,
	// InputImage); the daemon fills in its default when a job with input
	// gives none. "" in a record from before the field: files.
	InputMode string `json:"input_mode,omitempty"`
	// OutputMode is how the job's output is caught (OutputShared,
	// OutputPrivate); "" is shared.
	OutputMode string `json:"output_mode,omitempty"`
}

// Input modes (Spec.InputMode).
const (
	// InputFiles stages the input as files into the RAMDISK, which the
	// job sees read-write at its input path.
	InputFiles = "files"
	// InputImage packs the input into one read-only erofs image in the
	// RAMDISK, which each compute node mounts at the job's input path.
	InputImage = "image"
)

// Output modes (Spec.OutputMode).
const (
	// OutputShared: one RAM file system that all of the job's compute
	// nodes share, at the output path.
	OutputShared = "shared"
	// OutputPrivate: a file system of its own for each compute node,
	// which that node alone mounts at the output path; the trees are
	// merged at stage-out.
	OutputPrivate = "private"
)

// Part is a share of one RSA node's RAM held by a job.
type Part struct {
	Node  string `json:"node"`
	Bytes int64  `json:"bytes"`
	// Incarnation is the node's incarnation (its agent's boot and run
	// identity) when the part was given to the job: a loss of an earlier
	// incarnation lost nothing of this part. "" when unknown (engine
	// local, or a record older than the field).
	Incarnation string `json:"incarnation,omitempty"`
}

// Owner identifies the process whose life is the job's run (`rsa run`),
// so that the job finishes even if that process is killed.
type Owner struct {
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"` // clock ticks since boot, from /proc/PID/stat
}

// Job is one job's record.
type Job struct {
	ID     int64    `json:"id"`
	Spec   Spec     `json:"spec"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	User   string   `json:"user"`
	Home   string   `json:"home,omitempty"`
	// Scheduler is the scheduler adapter that created the job ("slurm",
	// "slurm-poll"), or "" for rsa run and rsa submit. Only a job with a
	// scheduler answers to its scheduler's id (Spec.Name).
	Scheduler string `json:"scheduler,omitempty"`

	State lifecycle.JobState `json:"job_state"`
	RSA   lifecycle.RSAState `json:"rsa_state"`
	Alloc []Part             `json:"alloc,omitempty"`
	// Lost are the RSA nodes of Alloc that were lost (down or rebooted)
	// while the job held them: the part of the RAMDISK there is gone.
	// A new allocation clears it.
	Lost []string `json:"lost,omitempty"`
	// Build counts the RAMDISKs built for the job, each under a name of
	// its own: more than one when one was rebuilt for output after the
	// input, or on live nodes after a node was lost.
	Build int `json:"build,omitempty"`
	// ImageBuild is the build made for the input image, PrivateBuild the
	// one made for private output (lifecycle.Job).
	ImageBuild   int `json:"image_build,omitempty"`
	PrivateBuild int `json:"private_build,omitempty"`
	// PrivateLost: the private output's images can no longer be
	// verified (lifecycle.Job).
	PrivateLost bool `json:"private_lost,omitempty"`
	// Ramdisk is the RAMDISK's directory on the control host.
	Ramdisk string `json:"ramdisk,omitempty"`
	Owner   Owner  `json:"owner,omitzero"`
	// Hosts are the compute nodes the job runs on, from the scheduler;
	// the RAMDISK is mounted on each. Empty: this host.
	Hosts []string `json:"hosts,omitempty"`
	// NotBefore holds the stage-in back until this time: the job's
	// expected start less the lead time (a job due tomorrow holds no RAM
	// today).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Expected is the scheduler's estimate of the job's start that
	// NotBefore was worked out from. Zero with a NotBefore: the
	// scheduler has given no estimate yet, and NotBefore is how long
	// RSA waits for one.
	Expected time.Time `json:"expected,omitzero"`
	// Error is the last failure's reason, shown until the job ends.
	Error string `json:"error,omitempty"`
	// CapacityWait and WaitingSince are the job's bound on its wait for
	// RSA capacity and when that wait began (lifecycle.Job).
	CapacityWait time.Duration `json:"capacity_wait,omitempty"`
	WaitingSince time.Time     `json:"waiting_since,omitzero"`
	// UnstartedExpiry ends the job if it stays unstarted and unchanged
	// this long while no client holds it (rsa submit's jobs;
	// limits.unstarted_expiry when it was submitted). 0: never.
	UnstartedExpiry time.Duration `json:"unstarted_expiry,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// InputAt is when the input was mounted at its path (lifecycle.Job).
	InputAt    time.Time `json:"input_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at"`
	// NoticeAt is when the job's user was last told that its output
	// waits in RAM (config [notify]); notify.held_after counts from it.
	NoticeAt time.Time `json:"notice_at,omitzero"`
	// Staged is what the job's last stage-in and stage-out copied, as
	// the mover counted it (a stage program of the user's own counts
	// nothing): shown by rsa status and, for a Slurm job, written to its
	// AdminComment for sacct.
	Staged Staged `json:"staged,omitzero"`
	// Version increases with every committed change; clients wait on it.
	Version int64 `json:"version"`
}

// Staged counts what a job's stages copied.
type Staged struct {
	In  Amount `json:"in,omitzero"`
	Out Amount `json:"out,omitzero"`
}

// String is what was staged, "in 12 files 1.5G, out 3 files 1.0K", or ""
// when nothing was counted.
func (s Staged) String() string {
	var parts []string
	for _, p := range []struct {
		dir string
		a   Amount
	}{{"in", s.In}, {"out", s.Out}} {
		if p.a != (Amount{}) {
			parts = append(parts, fmt.Sprintf("%s %d files %s", p.dir, p.a.Files, units.FormatSize(p.a.Bytes)))
		}
	}
	return strings.Join(parts, ", ")
}

// Amount is a count of files and their bytes.
type Amount struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Machine is the job as the lifecycle machine sees it.
func (j *Job) Machine() lifecycle.Job {
	return lifecycle.Job{
		State:     j.State,
		RSA:       j.RSA,
		HasInput:  j.Spec.Input != "" || j.Spec.StageIn != "",
		HasOutput: j.Spec.Output != "",
		Delay:     j.Spec.Delay,
		StartedAt: j.StartedAt,
		InputAt:   j.InputAt,
		NodeLost:  len(j.Lost) > 0,
		Lost:      j.Lost,
		Error:     j.Error,

		Build:         j.Build,
		InputImage:    j.Spec.InputMode == InputImage,
		ImageBuild:    j.ImageBuild,
		OutputPrivate: j.Spec.OutputMode == OutputPrivate,
		PrivateBuild:  j.PrivateBuild,
		PrivateLost:   j.PrivateLost,
		FinishedAt:    j.FinishedAt,
		CapacityWait:  j.CapacityWait,
		WaitingSince:  j.WaitingSince,
		NotBefore:     j.NotBefore,
		ExpireAfter:   j.expireAfter(),
		ChangedAt:     j.UpdatedAt,
	}
}

// expireAfter is how long the job may stay unstarted: a job an rsa run
// holds (Owner) ends with its client, not by time.
func (j *Job) expireAfter() time.Duration {
	if j.Owner.PID != 0 {
		return 0
	}
	return j.UnstartedExpiry
}

// CheckText refuses a user-given value that could change meaning where RSA
// writes it: control characters (NUL, tab, newline, carriage return,
// escape, every other C0 and C1 code, DEL) and bytes that are not UTF-8. A
// newline in a path would end a line of Slurm's path file and start a new
// environment variable; an escape sequence would reach an admin's
// terminal. what names the value for the message.
func CheckText(what, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s %q is not valid UTF-8; rename it", what, v)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Errorf("%s %q contains the control character %U; RSA accepts no control characters (newline, tab, escape, ...) in paths and names: rename it", what, v, r)
		}
	}
	return nil
}

// Capacity is the RAM the job holds, in bytes.
func (j *Job) Capacity() int64 {
	var n int64
	for _, p := range j.Alloc {
		n += p.Bytes
	}
	return n
}

// Nodes lists the RSA nodes the job holds RAM on.
func (j *Job) Nodes() []string {
	var ns []string
	for _, p := range j.Alloc {
		ns = append(ns, p.Node)
	}
	return ns
}

// Event is one line of a job's log (App. T style).
type Event struct {
	JobID    int64              `json:"job_id"`
	At       time.Time          `json:"at"`
	Kind     string             `json:"kind"`
	JobState lifecycle.JobState `json:"job_state"`
	RSAState lifecycle.RSAState `json:"rsa_state"`
	Message  string             `json:"message"`
}

// Progress is a staging phase's progress as the mover reports it.
type Progress struct {
	Phase      string    `json:"phase"`
	Files      int64     `json:"files"`
	Bytes      int64     `json:"bytes"`
	TotalFiles int64     `json:"total_files,omitempty"`
	TotalBytes int64     `json:"total_bytes,omitempty"`
	Started    time.Time `json:"started"`
	Updated    time.Time `json:"updated"`
}

// Rate is bytes per second so far.
func (p Progress) Rate() float64 {
	d := p.Updated.Sub(p.Started).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(p.Bytes) / d
}

// ETA estimates the time left, or 0 when unknown.
func (p Progress) ETA() time.Duration {
	r := p.Rate()
	if r <= 0 || p.TotalBytes <= p.Bytes {
		return 0
	}
	return time.Duration(float64(p.TotalBytes-p.Bytes) / r * float64(time.Second))
}
