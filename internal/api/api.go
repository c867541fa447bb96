// Package api is the wire between `rsa serve` and every other entry point:
// HTTP/JSON over a Unix socket, where the caller's identity is the socket
// peer's credentials (SO_PEERCRED), never anything the caller says. It owns
// the request and response types, the HTTP routes and the client. It must
// not decide anything: the daemon behind Service does.
package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// Peer is the calling process, as the kernel reports it.
type Peer struct {
	PID int32
	UID uint32
	GID uint32
	// Remote: the caller is on another host, known by a MUNGE
	// credential (no pid; never root).
	Remote bool
}

// Root reports whether the caller is root on the daemon's host.
func (p Peer) Root() bool { return p.UID == 0 && !p.Remote }

// SubmitRequest creates a job.
type SubmitRequest struct {
	Spec job.Spec `json:"spec"`
	// Attach makes the calling process the job's owner: when it exits, the
	// job is finished (rsa run).
	Attach bool `json:"attach,omitempty"`
}

// JobView is a job with what the daemon knows beyond the record.
type JobView struct {
	job.Job
	Progress *job.Progress `json:"progress,omitempty"`
	Used     int64         `json:"ram_used,omitempty"`
	Waiting  string        `json:"waiting,omitempty"` // why it waits, e.g. for capacity
	// Private says the caller sees only the public part of another
	// user's job (private_data): its paths, errors and log are left out.
	Private bool `json:"private,omitempty"`

	// Phase, InRAM and Terminal say what the job's states mean, as the
	// lifecycle defines it (NewJobView). Clients read these rather than
	// the raw states, which grow with the lifecycle.

	// Phase is the part of its life the job's RAMDISK is in.
	Phase lifecycle.Phase `json:"phase"`
	// InRAM: the job works in RAM now (its input is served from its
	// RAMDISK, or its output goes into it).
	InRAM bool `json:"in_ram"`
	// Terminal: nothing more will happen to the job.
	Terminal bool `json:"terminal"`
}

// NodeView is one RSA node's use.
type NodeView struct {
	Name     string `json:"name"`
	Engine   string `json:"engine"`
	Capacity int64  `json:"capacity"`
	Used     int64  `json:"allocated"`
	// Owed is the part of Used that teardowns left while the node was
	// silent: held until its agent confirms it gone.
	Owed int64   `json:"owed,omitempty"`
	Jobs []int64 `json:"jobs,omitempty"`
	// Drain is set while an administrator keeps new jobs off the node.
	Drain *DrainView `json:"drain,omitempty"`
	// Agent is the health of the node's agent (engine gluster).
	Agent *AgentView `json:"agent,omitempty"`
}

// AgentView is what the daemon last heard from a node's agent.
type AgentView struct {
	// State is "up", "suspect" (silent less than cluster.down_after: no
	// new jobs) or "down" (lost: its jobs' parts there are gone).
	State string `json:"state"`
	Up    bool   `json:"up"`
	// Rebooted counts the node's reboots the daemon saw.
	Rebooted int `json:"rebooted,omitempty"`
	// Seen is when the agent last answered; zero if never.
	Seen time.Time `json:"seen,omitzero"`
	// BootID changes when the node reboots (its RAMDISK parts are gone).
	BootID string `json:"boot_id,omitempty"`
	// Version is the agent's; rsa serve logs a warning when it differs
	// from its own.
	Version      string `json:"version,omitempty"`
	MemAvailable int64  `json:"mem_available,omitempty"`
	Bricks       int    `json:"bricks"`
	Error        string `json:"error,omitempty"`
	// Unpooled says why no new RAMDISK is placed on the node though its
	// agent answers: the rifts in glusterd's trusted pool that keep it
	// out (engine gluster); "" when there are none.
	Unpooled string `json:"unpooled,omitempty"`
	// PoolError is why its glusterd did not answer the last question
	// about its pool.
	PoolError string `json:"pool_error,omitempty"`
}

// CertificateView is one host's TLS certificate, as far as its expiry
// goes: the daemon's own (role control), or an agent's as the daemon's
// last handshake with it verified it.
type CertificateView struct {
	Node string `json:"node"`
	// Role is the certificate's: control, storage, compute or both.
	Role     string    `json:"role"`
	NotAfter time.Time `json:"not_after"`
	Serial   string    `json:"serial"` // hex
}

// DrainView says who drained a node, when and why.
type DrainView struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	Since  time.Time `json:"since"`
}

// State is "up", "draining" (drained, jobs still hold RAM on it),
// "drained" (drained and empty: safe to take down), or, for a node whose
// agent is silent, its agent's state: "suspect" (no new jobs yet) or
// "down" (lost).
func (n NodeView) State() string {
	switch {
	case n.Agent != nil && !n.Agent.Up:
		return cmp.Or(n.Agent.State, "down")
	case n.Drain == nil:
		return "up"
	case len(n.Jobs) > 0:
		return "draining"
	}
	return "drained"
}

// DrainRequest drains a node (Drain true, with a reason) or returns it to
// service.
type DrainRequest struct {
	Drain  bool   `json:"drain"`
	Reason string `json:"reason,omitempty"`
}

// SettleRequest asks to forget what teardowns left on a node that will
// not answer again.
type SettleRequest struct {
	Reason string `json:"reason"`
}

// SettleReport is what settling a node forgot.
type SettleReport struct {
	Node    string  `json:"node"`
	Settled int     `json:"settled"` // debts forgotten
	Bytes   int64   `json:"bytes"`   // RSA RAM they held there
	Jobs    []int64 `json:"jobs"`    // whose records say who settled them, and why
}

// GCReport lists what gc removed.
type GCReport struct {
	Removed []string `json:"removed"`
	// Quarantined are the RAMDISKs gc found holding data that no job
	// record knows of, and left alone.
	Quarantined []QuarantinedView `json:"quarantined"`
}

// GCRequest asks gc for more than its sweep.
type GCRequest struct {
	// Discard is a quarantined RAMDISK's job id to destroy, data and
	// all; 0: none.
	Discard int64 `json:"discard,omitempty"`
}

// QuarantinedView is a RAMDISK that holds data (or may: its engine cannot
// tell) and that no job record knows of, as after a state directory was
// restored from a backup older than the RAMDISK. RSA never destroys one
// by itself: an administrator saves what it holds, then discards it.
type QuarantinedView struct {
	Job   int64  `json:"job"`   // the id in its path, kept from new jobs
	Dir   string `json:"dir"`   // where the control host sees it
	Used  int64  `json:"used"`  // bytes in it; -1 unknown
	Files int64  `json:"files"` // what is below its root; -1 unknown
}

// VersionInfo identifies the daemon.
type VersionInfo struct {
	Version string `json:"version"`
	Schema  int    `json:"schema"`
	Config  string `json:"config"`
	// Host and Epoch: the active rsa serve of a failover pair, its host
	// and its lease epoch (also when asked through the standby); unset
	// outside a pair.
	Host  string `json:"host,omitempty"`
	Epoch int64  `json:"epoch,omitempty"`
}

// Verbs act on one job.
const (
	VerbStart   = "start"
	VerbFinish  = "finish"
	VerbCancel  = "cancel"
	VerbRetry   = "retry"
	VerbDiscard = "discard"
)

// ActOptions qualify a verb.
type ActOptions struct {
	// Attach (start): the job's processes are the caller's, for the
	// daemon to watch.
	Attach bool
	// To (retry): stage the output out to this directory instead of the
	// job's, which the job's user must own, as at submission.
	To string
}

// Service is what the daemon offers. Implementations check the peer's right
// to each call.
type Service interface {
	Submit(ctx context.Context, p Peer, r SubmitRequest) (*JobView, error)
	Jobs(ctx context.Context, p Peer, all bool) ([]JobView, error)
	// Job returns the job once its version is above after, or when wait ends.
	Job(ctx context.Context, p Peer, id int64, after int64, wait time.Duration) (*JobView, error)
	Events(ctx context.Context, p Peer, id int64) ([]job.Event, string, error)
	Act(ctx context.Context, p Peer, id int64, verb string, o ActOptions) (*JobView, error)
	Nodes(ctx context.Context, p Peer) ([]NodeView, error)
	// Drain drains an RSA node or returns it to service (root only);
	// asked twice, the second changes only the reason.
	Drain(ctx context.Context, p Peer, node string, r DrainRequest) (*NodeView, error)
	GC(ctx context.Context, p Peer, r GCRequest) (*GCReport, error)
	// Settle forgets the debts owed on a node that will not answer
	// again (root only).
	Settle(ctx context.Context, p Peer, node string, r SettleRequest) (*SettleReport, error)
	// Quarantined are the RAMDISKs the last gc left alone for holding
	// data no job record knows of, to anyone.
	Quarantined(ctx context.Context, p Peer) ([]QuarantinedView, error)
	// Certificates are the daemon's TLS certificate and each agent's
	// (engine gluster), to anyone; none without agents.
	Certificates(ctx context.Context, p Peer) ([]CertificateView, error)
	Version(ctx context.Context) VersionInfo
	// Hook answers a scheduler hook: one of Slurm's burst_buffer/lua
	// calls, or the prolog or epilog. Only root and the configured
	// scheduler users may call it.
	Hook(ctx context.Context, p Peer, r HookRequest) (*HookReply, error)
}

// HookRequest is one scheduler hook call.
type HookRequest struct {
	Hook string   `json:"hook"`
	Args []string `json:"args,omitempty"`
	// Script is the job script's text, for the hooks that read it.
	Script string `json:"script,omitempty"`
	// Wait is how long a hook whose work is under way may wait for it
	// before answering Busy.
	Wait time.Duration `json:"wait,omitempty"`
	// Via is how the hook came: "" through rsa slurm-bb (or the prolog
	// and epilog), ViaLuaSocket from burst_buffer.lua itself. It labels
	// the hook's latency, so an admin sees which path slurmctld takes.
	Via string `json:"via,omitempty"`
}

// ViaLuaSocket is HookRequest.Via for burst_buffer.lua asking over the
// socket without a process.
const ViaLuaSocket = "lua-socket"

// Hook verdicts, as burst_buffer.lua passes them to Slurm.
const (
	Success = "SUCCESS"
	Failure = "ERROR"
	Busy    = "BUSY" // not done yet: ask again
)

// HookReply is a hook's verdict, the message Slurm shows (as the job's
// Reason on failure), and for the paths hook the job's environment lines.
type HookReply struct {
	Verdict string   `json:"verdict"`
	Message string   `json:"message,omitempty"`
	Env     []string `json:"env,omitempty"`
}

// envName is the only kind of variable RSA puts into a job's environment.
var envName = regexp.MustCompile(`^RSA_[A-Z_]+$`)

// CheckEnv refuses environment lines that could be anything but one RSA_*
// variable each in Slurm's path file: a newline would start another
// variable (BASH_ENV=...). Every writer of the path file checks at the
// point of writing, whatever the daemon checked before.
func CheckEnv(env []string) error {
	for _, l := range env {
		name, value, ok := strings.Cut(l, "=")
		if !ok || !envName.MatchString(name) || job.CheckText(name, value) != nil {
			return fmt.Errorf("refusing to write %s into the job's environment", textsafe.Line(strconv.Quote(l)))
		}
	}
	return nil
}

// HookText is the plain-text form of a hook's reply, for burst_buffer.lua
// when it asks over the socket itself (Accept: text/plain) instead of
// starting rsa slurm-bb: the verdict on the first line, the message on
// the second (one line, escaped), then the environment lines of the paths
// hook, one a line. Lua 5.1 reads that with two patterns and no JSON.
func HookText(r *HookReply) string {
	if err := CheckEnv(r.Env); err != nil {
		r = &HookReply{Verdict: Failure, Message: "rsa: paths: " + err.Error()}
	}
	var b strings.Builder
	b.WriteString(textsafe.Line(r.Verdict) + "\n" + textsafe.Line(r.Message) + "\n")
	for _, l := range r.Env {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// Error is a failure with the HTTP status it travels as.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Errorf builds an Error.
func Errorf(status int, format string, args ...any) error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// Forbidden, NotFound and Invalid are the usual refusals.
func Forbidden(format string, args ...any) error {
	return Errorf(http.StatusForbidden, format, args...)
}
func NotFound(format string, args ...any) error { return Errorf(http.StatusNotFound, format, args...) }
func Invalid(format string, args ...any) error  { return Errorf(http.StatusBadRequest, format, args...) }

// refusals are the HTTP statuses of the daemon's refusals (package
// refuse), the one place they are chosen.
var refusals = []struct {
	kind   error
	status int
}{
	{refuse.ErrInvalid, http.StatusBadRequest},
	{refuse.ErrForbidden, http.StatusForbidden},
	{refuse.ErrNotFound, http.StatusNotFound},
	{refuse.ErrNotApplicable, http.StatusConflict},
	{refuse.ErrLimit, http.StatusTooManyRequests},
	{refuse.ErrUnavailable, http.StatusServiceUnavailable},
}

// StatusOf maps an error to its HTTP status: an Error's own, a refusal's
// (package refuse), or 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	for _, r := range refusals {
		if errors.Is(err, r.kind) {
			return r.status
		}
	}
	return http.StatusInternalServerError
}
