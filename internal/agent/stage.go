package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// Staging: on an RSA node the agent runs a job's stage-in or stage-out
// between the job's data directory (the shared file system, which RSA
// nodes see as compute nodes do) and the job's volume, mounted on the
// node for the stage. It runs as the job's user, in a cgroup of its own
// killed whole when the stage ends, exactly as rsa serve runs it on one
// host (package stage): the copy's traffic goes between the RSA node and
// the file servers, not through the control host.
//
// The answer is a stream of StageEvent lines, the last with Done or
// Error. The stage lives as long as the request: if the daemon goes
// away (a crash, a lost connection), the stage is killed, and the daemon
// runs it again when it resumes.

// StageRequest is what POST /v1/stage/{volume} asks for.
type StageRequest struct {
	Phase  stage.Phase `json:"phase"`
	UID    uint32      `json:"uid"` // the job's user, never root
	GID    uint32      `json:"gid"`
	Groups []uint32    `json:"groups,omitempty"`
	User   string      `json:"user"` // the user's name, for USER and LOGNAME
	Home   string      `json:"home"` // for HOME
	// Program is the user's stage program (an absolute path), a built-in
	// mode (stage.ModePack, stage.ModeUnpack), or "" for the copy.
	Program string `json:"program,omitempty"`
	// Data is the job's input (stage-in) or output (stage-out) directory.
	Data string `json:"data"`
	// Servers are the addresses the volume is mounted from.
	Servers []string `json:"servers"`
	// BWLimit caps a built-in copy's reads in bytes per second (0: none).
	BWLimit int64 `json:"bwlimit,omitempty"`
	// Degraded: the daemon found a part of the volume out of reach, so
	// a stage-out does not wait for this node's client to reach it.
	Degraded bool `json:"degraded,omitempty"`
	// WholeSettle bounds how long a stage-out that is not Degraded waits
	// for this node's client to reach every part before it lists the
	// volume (the daemon's cluster.whole_settle; nanoseconds on the wire,
	// 0: defaultWholeSettle).
	WholeSettle time.Duration `json:"whole_settle,omitempty"`
	// Limits confine the stage's processes: the daemon's limits.stage_*
	// keys, so that one config says them for every host that stages.
	// Required: a request without them (from a daemon older than this
	// agent) is refused rather than run unconfined.
	Limits *StageLimits `json:"limits"`
	// Image: the built-in stage-in builds the volume's input image
	// (stage.Task.Image) in the volume's root, which is root's alone.
	Image bool `json:"image,omitempty"`
	// Part: the built-in stage-in copies one share of the input, the
	// other shares copied by other RSA nodes at once, or finishes them
	// (stage.Part).
	Part stage.Part `json:"part,omitzero"`
}

// StageLimits are what a stage's processes are held to (stage.Runner's
// Limits and Network): a count of 0 is no limit of its kind.
type StageLimits struct {
	Memory int64 `json:"memory"` // bytes of memory.max
	Pids   int64 `json:"pids"`   // pids.max
	// CPU is in thousandths of a CPU (cgroup.Limits.CPU).
	CPU int64 `json:"cpu"`
	// Network is stage.NetworkNone or stage.NetworkHost.
	Network stage.Network `json:"network"`
}

// StageEvent is one line of a stage's answer.
type StageEvent struct {
	Log      string          `json:"log,omitempty"`
	Progress *stage.Progress `json:"progress,omitempty"`
	Error    string          `json:"error,omitempty"`
	Done     bool            `json:"done,omitempty"`
}

// userName is what a user name must look like to reach a child's
// environment: the shadow-utils rule, which is also Debian's.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}\$?$`)

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

func (r StageRequest) check() error {
	if r.Phase != stage.StageIn && r.Phase != stage.StageOut {
		return failf(ErrInvalid, "phase %q is neither stage-in nor stage-out", shorten(string(r.Phase)))
	}
	if err := r.Part.Check(); err != nil {
		return failf(ErrInvalid, "%v", err)
	}
	if r.Part != (stage.Part{}) && (r.Phase != stage.StageIn || r.Program != "" || r.Image) {
		return failf(ErrInvalid, "only the built-in copy of a stage-in is split in shares")
	}
	if r.UID == 0 || r.GID == 0 {
		return failf(ErrInvalid, "staging as uid %d gid %d: RSA never stages as root", r.UID, r.GID)
	}
	if !userName.MatchString(r.User) {
		return failf(ErrInvalid, "user name %q is not a valid login name", shorten(r.User))
	}
	if r.Home != "" && !cleanAbs(r.Home) {
		return failf(ErrInvalid, "home %q is not a clean absolute path", shorten(r.Home))
	}
	if !cleanAbs(r.Data) {
		return failf(ErrInvalid, "data directory %q is not a clean absolute path", shorten(r.Data))
	}
	if r.Program != "" && !stage.BuiltIn(r.Program) && !cleanAbs(r.Program) {
		return failf(ErrInvalid, "stage program %q is not a clean absolute path", shorten(r.Program))
	}
	if len(r.Servers) == 0 {
		return failf(ErrInvalid, "no servers to mount the volume from")
	}
	if r.BWLimit < 0 {
		return failf(ErrInvalid, "bwlimit %d is negative", r.BWLimit)
	}
	if r.WholeSettle < 0 || r.WholeSettle > maxWholeSettle {
		return failf(ErrInvalid, "whole_settle %v is not 0 to %v", r.WholeSettle, maxWholeSettle)
	}
	l := r.Limits
	switch {
	case l == nil:
		return failf(ErrInvalid, "the request carries no limits for the stage, which this agent does not run unconfined: rsa serve is older than this agent; upgrade it to the agent's version")
	case l.Memory < 0 || l.Pids < 0 || l.CPU < 0:
		return failf(ErrInvalid, "stage limits memory %d, pids %d, cpu %d: none may be negative", l.Memory, l.Pids, l.CPU)
	case l.CPU > 0 && l.CPU < cgroup.MinCPU:
		return failf(ErrInvalid, "stage cpu limit %d thousandths of a CPU is below the kernel's smallest, %d", l.CPU, cgroup.MinCPU)
	case l.Network != stage.NetworkNone && l.Network != stage.NetworkHost:
		return failf(ErrInvalid, "stage network %q is neither %q nor %q", shorten(string(l.Network)), stage.NetworkNone, stage.NetworkHost)
	}
	return nil
}

// streamWriter writes StageEvents, one JSON line each, flushed at once.
type streamWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	rc  *http.ResponseController
}

func (w *streamWriter) send(ev StageEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.enc.Encode(ev)
	w.rc.Flush()
}

// Write sends what the stage logs as log events.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.send(StageEvent{Log: string(p)})
	return len(p), nil
}

// serveStage is POST /v1/stage/{volume}. Refusals before the stage
// starts are answered as every other error; once it runs, the answer is
// 200 and the outcome is the stream's last line.
func (s *Server) serveStage(w http.ResponseWriter, r *http.Request, volume string) error {
	id, err := ParseVolume(volume)
	if err != nil {
		return err
	}
	var req StageRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	if s.runner == nil {
		return failf(ErrForbidden, "this agent does not stage (no cgroup for staging children)")
	}
	// Running from here, its mount included; ok only once it is done.
	ended, ok := s.metrics.StageStarted(string(req.Phase)), false
	defer func() { ended(ok) }()
	dir, err := s.mountForStage(r.Context(), volume, req.Servers, req.UID, req.Image)
	if err != nil {
		return err
	}
	defer s.unmountAfterStage(volume)
	rc := http.NewResponseController(w)
	// A stage takes as long as the data needs: no write deadline.
	rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{enc: json.NewEncoder(w), rc: rc}
	runner := *s.runner
	runner.BWLimit = req.BWLimit
	runner.Limits = cgroup.Limits{Memory: req.Limits.Memory, Pids: req.Limits.Pids, CPU: req.Limits.CPU}
	runner.Network = req.Limits.Network
	s.log.Info("stage started", "volume", volume, "phase", req.Phase, "uid", req.UID, "data", req.Data)
	started := time.Now()
	// A part of the volume this node's client does not reach, or that
	// leaves and comes back (emptied, if its node rebooted), loses files
	// without an error: a stage-out's listing leaves them out, a
	// stage-in's files written under their final names are gone. So the
	// client's view is checked before and after either; a stage-in also
	// lists what it copied (rsa copy --check-listing).
	settle := cmp.Or(req.WholeSettle, defaultWholeSettle)
	if req.Degraded {
		settle = 0
	}
	before := s.awaitWhole(r.Context(), dir, volume, req.Phase, settle, sw)
	err = runner.Run(r.Context(), stage.Task{
		Job: id, Phase: req.Phase, Program: req.Program, Ramdisk: dir, Data: req.Data, Log: sw,
		User:     stage.Identity{UID: req.UID, GID: req.GID, Groups: req.Groups, Name: req.User, Home: req.Home},
		Progress: func(p stage.Progress) { sw.send(StageEvent{Progress: &p}) },
		// Nobody mounts the volume before its stage-in has ended.
		Private: req.Phase == stage.StageIn, Partial: true, Image: req.Image, Part: req.Part,
	})
	if err == nil {
		err = s.listedWhole(dir, volume, id, req.Phase, before)
	}
	if err != nil {
		s.log.Warn("stage failed", "volume", volume, "phase", req.Phase, "err", err)
		sw.send(StageEvent{Error: err.Error()})
		return nil
	}
	s.log.Info("stage done", "volume", volume, "phase", req.Phase, "seconds", time.Since(started).Seconds())
	ok = true
	sw.send(StageEvent{Done: true})
	return nil
}

// defaultWholeSettle bounds the wait for this node's client to reach
// every part of a volume before a stage-out lists it, unless the request
// says otherwise: a client just mounted, or meeting a brick just
// restarted, connects within a few seconds (it tries every 3).
// maxWholeSettle is the most a request may ask for.
const (
	defaultWholeSettle = 10 * time.Second
	maxWholeSettle     = 5 * time.Minute
)

// awaitWhole waits up to settle for this node's Gluster client of
// volume, mounted at dir, to reach every part of it, and returns its
// view then. A part out of reach is logged and the copy goes on: what
// can be copied is (listedWhole then fails the stage).
func (s *Server) awaitWhole(ctx context.Context, dir, volume string, phase stage.Phase, settle time.Duration, log io.Writer) gluster.Distribution {
	deadline := time.Now().Add(settle)
	for {
		d, err := gluster.ReadDistribution(dir, volume)
		if err == nil && d.Whole() {
			return d
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			why := "it does not reach " + strings.Join(d.Down(dir), ", ")
			if err != nil {
				why = err.Error()
			}
			what := "the files there cannot be listed"
			if phase != stage.StageOut {
				what = "the files it would hold cannot be written"
			}
			fmt.Fprintf(log, "%s %s: this node's Gluster client of the RAMDISK after %v: %s; %s\n",
				time.Now().Format(time.RFC3339), phase, settle, why, what)
			return d
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listedWhole fails a stage unless this node's client reached every part
// of volume from before the copy (before) to after it, without a break: a
// part out of reach, or gone and back meanwhile, had its files left out
// of a stage-out's listing, or lost a stage-in's files, which no error
// told.
func (s *Server) listedWhole(dir, volume string, job int64, phase stage.Phase, before gluster.Distribution) error {
	after, err := gluster.ReadDistribution(dir, volume)
	if err == nil && len(before.Up) == 0 {
		err = fmt.Errorf("its view before the copy was not to be had")
	}
	again := fmt.Sprintf("'rsa retry %d' copies again", job)
	if phase != stage.StageOut {
		again = "the job reads its input from disk, unless RSA finds an RSA node lost and builds the RAMDISK anew"
	}
	switch {
	case err != nil:
		return fmt.Errorf("%s not verified: whether this node's Gluster client reached every part of the RAMDISK is unknown: %w; %s", phase, err, again)
	case !before.Whole() || !after.Whole():
		down := after.Down(dir)
		if !before.Whole() {
			down = before.Down(dir)
		}
		return fmt.Errorf("%s not verified: this node's Gluster client did not reach %s, whose files the copy could not reach; %s (the client retries every 3 s; this node's log of the volume is in /var/log/glusterfs)",
			phase, strings.Join(down, ", "), again)
	case before.Gen != after.Gen:
		return fmt.Errorf("%s not verified: a part of the RAMDISK left this node's Gluster client and came back during the copy (distribute generation %d, then %d), which may have left its files out; %s",
			phase, before.Gen, after.Gen, again)
	}
	return nil
}

// StageError is a stage that ran on an agent's node and failed there, as
// opposed to an agent that did not answer or stopped answering mid-way.
type StageError struct {
	Node string
	Why  string
}

func (e *StageError) Error() string { return fmt.Sprintf("on %s: %s", e.Node, e.Why) }

// Stage runs a stage of volume's job on the agent's node (see
// serveStage): log lines go to log, progress to progress, and the result
// is the stage's: a *StageError if it ran and failed. Cancelling ctx ends
// the stage on the node.
func (c *Client) Stage(ctx context.Context, volume string, req StageRequest, log io.Writer, progress func(stage.Progress)) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	var result error = fmt.Errorf("agent on %s: the stage's answer ended without its outcome (the agent stopped?)", c.node)
	err := c.stream(ctx, c.storage, "/v1/stage/"+volume, req, func(line []byte) error {
		var ev StageEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("agent on %s: bad stage event: %w", c.node, err)
		}
		switch {
		case ev.Log != "":
			if log != nil {
				io.WriteString(log, ev.Log)
			}
		case ev.Progress != nil:
			if progress != nil {
				progress(*ev.Progress)
			}
		case ev.Error != "":
			result = &StageError{Node: c.node, Why: ev.Error}
		case ev.Done:
			result = nil
		}
		return nil
	})
	if err != nil {
		return err
	}
	return result
}

// stream POSTs in and hands each line of a 200 answer to fn; any other
// answer is an *Error as in do.
func (c *Client) stream(ctx context.Context, hc *http.Client, path string, in any, fn func([]byte) error) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("agent on %s: encoding the request: %w", c.node, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("agent on %s: %w", c.node, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("agent on %s: POST %s: %w", c.node, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
		return answerError(c.node, http.MethodPost, path, resp, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("agent on %s: POST %s: reading the answer: %w", c.node, path, err)
	}
	return nil
}

// mountForStage mounts volume on this node, if it is not yet, behind its
// gate opened for uid, and returns where.
func (s *Server) mountForStage(ctx context.Context, volume string, servers []string, uid uint32, image bool) (string, error) {
	for _, h := range servers {
		if err := gluster.CheckHost(h); err != nil {
			return "", failf(ErrInvalid, "volume %s: server %w", volume, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok, err := s.volumeAt(volume)
	if err != nil {
		return "", err
	}
	if err := s.openGate(volume, uid, image); err != nil {
		return "", err
	}
	if !ok {
		if _, err := s.mountVolume(ctx, volume, servers); err != nil {
			return "", err
		}
	}
	if s.staging == nil {
		s.staging = map[string]int{}
	}
	s.staging[volume]++
	return s.volumeSource(volume), nil
}

// releaseIdle releases volume unless a stage runs on it here now (one
// that started since the last ended keeps the mount).
func (s *Server) releaseIdle(volume string, detach bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.staging[volume] > 0 {
		return nil
	}
	return s.release(volume, detach)
}

// unmountAfterStage takes the staging mount away again, unless the node
// is also one of the job's compute nodes and shows the volume at a job
// directory: that stays until the daemon releases it.
func (s *Server) unmountAfterStage(volume string) {
	s.mu.Lock()
	s.staging[volume]--
	if s.staging[volume] <= 0 {
		delete(s.staging, volume)
	}
	s.mu.Unlock()
	binds, err := mount.Binds(s.volumeSource(volume))
	if err == nil && len(binds) > 0 {
		return
	}
	// The stage's processes are killed with its cgroup, but the kernel
	// may still be closing their files: the mount is asked again for a
	// while, then detached (the stage is over; nothing of RSA's or the
	// user's belongs there any more, and the client ends with its last
	// reference).
	err = s.releaseIdle(volume, false)
	for try := 0; errors.Is(err, ErrBusy) && try < stageUnmountTries; try++ {
		time.Sleep(stageUnmountPause)
		err = s.releaseIdle(volume, false)
	}
	if errors.Is(err, ErrBusy) {
		s.log.Warn("a staging mount still in use after its stage: detaching it", "volume", volume, "err", err)
		err = s.releaseIdle(volume, true)
	}
	if err != nil {
		s.log.Warn("unmounting a staging mount", "volume", volume, "err", err)
	}
}

// How unmountAfterStage waits for a staging mount's last files to close.
const (
	stageUnmountTries = 20
	stageUnmountPause = 250 * time.Millisecond
)

// streamOp is op for an operation that writes its own answer: fn returns
// an error only before it has written anything.
func (s *Server) streamOp(kind pki.Kind, fn func(w http.ResponseWriter, r *http.Request, volume string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := func() error {
			if err := s.id.Current().Authorize(r.TLS, kind); err != nil {
				return failf(ErrForbidden, "%w", err)
			}
			s.metrics.DaemonRequest()
			v := r.PathValue("volume")
			if err := CheckVolume(v); err != nil {
				return err
			}
			return fn(w, r, v)
		}()
		if err != nil {
			s.log.Warn("agent request failed", "from", r.RemoteAddr, "method", r.Method, "path", shorten(r.URL.Path), "err", err)
			reply(w, nil, err)
		}
	}
}
