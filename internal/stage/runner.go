package stage

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Identity is who a staging child runs as.
type Identity struct {
	UID, GID uint32
	Groups   []uint32
	Name     string
	Home     string
}

// Phase is which of a job's two stages a Task is.
type Phase string

const (
	StageIn  Phase = "stage-in"  // into the RAMDISK from the input directory
	StageOut Phase = "stage-out" // from the RAMDISK into the output directory
)

// Task is one staging phase of one job.
type Task struct {
	Job     int64
	Phase   Phase
	User    Identity
	Program string // the user's stage program; "" for the built-in copy, or ModePack / ModeUnpack
	Ramdisk string // $1 of a stage program
	Data    string // $2: the input or output directory
	// Log receives the child's diagnostics and a stage program's output.
	Log io.Writer
	// Progress receives the built-in copy's progress.
	Progress func(Progress)
	// Private says that no one looks into the RAMDISK until a stage-in
	// ends: the built-in copy and unpack may write final names at once
	// (rsa copy without --atomic). Any other stage writes each file under
	// a temporary name renamed into place once complete (--atomic): a
	// stage-out into the user's own directory, where the user may look.
	Private bool
	// Partial says that the RAMDISK can lose a part of itself while the
	// stage-in runs, every write still succeeding (a distribute Gluster
	// RAMDISK whose brick came back empty after its node rebooted). A
	// private copy then lists the RAMDISK at its end (rsa copy
	// --check-listing); an unpack, which has no tree to compare with,
	// keeps its temporary names, whose renames fail on such a loss.
	Partial bool
	// Degraded says that the daemon's check found a part of the RAMDISK
	// out of reach: a stage-out on an RSA node does not wait for its own
	// client to reach every part first (it would wait in vain).
	Degraded bool
	// Image asks the built-in stage-in for an input image: the user's
	// pack (rsa copy --pack-fd) streams the input directory as a tar,
	// read with the user's rights, into the runner, which builds one
	// erofs image of it at Ramdisk/ImageName as root. Ramdisk must be
	// root's alone (the engine builds it so for an image).
	Image bool
	// Built receives the image's figures once it is built and checked.
	Built func(ImageStats)
	// Part makes the built-in stage-in copy one share of a copy spread
	// over several hosts, or the run that finishes them (Mover.Part).
	Part Part
}

// Built-in staging modes beside the copy (thesis §3.2.4, Table 5.2):
// stage-out packs the RAMDISK into one tar in the output directory, stage-in
// unpacks every tar of the input directory into the RAMDISK.
const (
	ModePack   = "pack"
	ModeUnpack = "unpack"
)

// PackName is the archive a packed stage-out writes into the output
// directory.
func PackName(job int64) string { return fmt.Sprintf("rsa-job-%d.tar", job) }

// BuiltIn reports whether a stage program is one of the built-in modes.
func BuiltIn(p string) bool { return p == ModePack || p == ModeUnpack }

// Network is what network a staging child has.
type Network string

const (
	// NetworkNone gives each stage a network namespace of its own, with
	// nothing in it but a loopback that is down: a stage program reaches
	// no daemon of this host (glusterd, the bricks, the agent) and
	// nothing beyond it. Mounted file systems (the parallel file system,
	// the RAMDISK, FUSE or not) work all the same: the kernel and the
	// FUSE servers, not the stage, speak to their servers.
	NetworkNone Network = "none"
	// NetworkHost leaves stages on the host's network, for stage programs
	// that fetch their data over it; they then reach every port of the
	// host, glusterd's and the bricks' among them.
	NetworkHost Network = "host"
)

// Runner starts staging children. Self is the rsa binary, which users can
// execute (they run `rsa run` with it). Every child and whatever it starts
// runs in a cgroup of its own below Cgroups, held to Limits and killed whole
// when the stage ends, however it ends; with no_new_privs set, so that no
// setuid or file-capability program it runs gains a privilege the job's
// user does not have; and in the network Network says.
type Runner struct {
	Self    string
	Cgroups *cgroup.Parent
	// Limits bound the memory, processes and CPU time of each stage
	// (its whole cgroup); a zero field is no limit of that kind.
	Limits cgroup.Limits
	// Network is the stages' network; "" is NetworkNone.
	Network Network
	// BWLimit caps the bytes per second a built-in copy reads (0: no
	// cap); a job's own program is not held to it.
	BWLimit int64
	// Image bounds input images (Task.Image).
	Image ImageLimits
	// LogHead and LogTail bound what one stage writes to its log: the
	// first LogHead bytes and the last LogTail are kept (0: 1 MiB and 256
	// KiB).
	LogHead, LogTail int
}

// Run runs t to its end as t.User. When the child exits, is cancelled with
// ctx, or times out, its cgroup is killed, so nothing it started outlives
// the stage. The built-in copy verifies stage-out content before it reports
// success.
func (r *Runner) Run(ctx context.Context, t Task) error {
	if r.Cgroups == nil {
		return errors.New("staging needs a cgroup to run in (Runner.Cgroups)")
	}
	cloneflags, err := r.cloneflags(t.Phase)
	if err != nil {
		return err
	}
	if err := checkTask(t); err != nil {
		return err
	}
	var img *image
	if t.Image {
		if img, err = openImage(t.Ramdisk, r.Image); err != nil {
			return fmt.Errorf("%s: %w", t.Phase, err)
		}
		defer img.w.Close()
	}
	args, dir := r.command(t)
	cg, ramdisk, err := r.newCgroup(ctx, t)
	if err != nil {
		return err
	}
	defer cg.Close()

	out := r.newOutput(t.Log)
	defer out.capped.Close()
	if err := out.openPipes(); err != nil {
		return err
	}
	cmd := childCmd(t, args, dir, out, img, cg, cloneflags)
	out.read(t.Progress, t.custom())
	done, err := startConfined(cmd, cg)
	if img != nil {
		img.started(ctx, err)
	}
	if err == nil {
		err = waitChild(ctx, cg, done)
	}
	events, cerr := endStage(cg, out)
	var childErr error
	switch {
	case err != nil, events.OOMKills > 0 && r.Limits.Memory > 0:
		// A stage the kernel killed processes of at its memory limit
		// failed, even if what was left of it exited 0: a program that
		// ignores its copy's death must not pass a cut-short stage.
		childErr = r.childError(ctx, t, err, events, ramdisk, out.tail, t.custom(), cloneflags)
	case cerr != nil:
		childErr = fmt.Errorf("%s: %w", t.Phase, cerr)
	}
	if img != nil {
		st, err := img.finish(t.Phase, childErr, out.capped)
		if err == nil && t.Built != nil {
			t.Built(st)
		}
		return err
	}
	return childErr
}

// custom reports whether t runs the user's own stage program rather than
// the built-in copy or one of its modes.
func (t Task) custom() bool { return t.Program != "" && !BuiltIn(t.Program) }

// cloneflags are the namespace flags of r.Network's stages, or an error
// naming phase if r.Network is none of the networks.
func (r *Runner) cloneflags(phase Phase) (uintptr, error) {
	switch r.Network {
	case "", NetworkNone:
		return syscall.CLONE_NEWNET, nil
	case NetworkHost:
		return 0, nil
	default:
		return 0, fmt.Errorf("%s: staging network %q is neither %q nor %q", phase, r.Network, NetworkNone, NetworkHost)
	}
}

// checkTask refuses the combinations of t's fields no stage runs: an input
// image built other than by the built-in stage-in, or a copy spread over
// hosts other than the built-in copy of a private stage-in.
func checkTask(t Task) error {
	switch {
	case t.Image && (t.Phase != StageIn || t.Program != ""):
		return fmt.Errorf("%s: an input image is built by the built-in stage-in alone, not by %q", t.Phase, cmp.Or(t.Program, "the stage-out"))
	case t.Part != (Part{}) && (t.Phase != StageIn || t.Program != "" || t.Image || !t.Private):
		return fmt.Errorf("%s: only the built-in copy of a private stage-in is spread over hosts", t.Phase)
	}
	return nil
}

// command is the command line of t's child and the directory it starts
// in: the user's program with $1 the RAMDISK and $2 the data directory,
// started in the RAMDISK, or rsa copy in one of its modes, started in /.
// An input image's pack writes its stream to fd 3.
func (r *Runner) command(t Task) (args []string, dir string) {
	copyArgs := r.copyArgs(t)
	switch {
	case t.Image:
		return append(copyArgs, "--pack", "--pack-fd=3", "--", t.Data), "/"
	case t.custom():
		return []string{t.Program, t.Ramdisk, t.Data}, t.Ramdisk
	case t.Program == ModePack:
		return append(copyArgs, "--pack", "--", t.Ramdisk, filepath.Join(t.Data, PackName(t.Job))), "/"
	case t.Program == ModeUnpack:
		return append(copyArgs, "--unpack", "--", t.Data, t.Ramdisk), "/"
	case t.Phase == StageOut:
		return append(copyArgs, "--", t.Ramdisk, t.Data), "/"
	default:
		return append(copyArgs, "--", t.Data, t.Ramdisk), "/"
	}
}

// copyArgs are the arguments of rsa copy for t before its mode and paths:
// what it reports, its bandwidth cap, and how it writes and checks what it
// writes.
func (r *Runner) copyArgs(t Task) []string {
	copyArgs := []string{r.Self, "copy", "--progress=json", "--json"}
	if !t.Image {
		copyArgs = append(copyArgs, "--sync") // an image's builder flushes it
	}
	if r.BWLimit > 0 {
		copyArgs = append(copyArgs, fmt.Sprintf("--bwlimit=%d", r.BWLimit))
	}
	switch {
	case t.Phase == StageOut:
		// Durable and verified before the RAMDISK may go.
		copyArgs = append(copyArgs, "--durable", "--verify", "--atomic")
	case t.Image:
		// A pack writes no names into the RAMDISK to rename or list:
		// the builder checks the image whole.
	case !t.Private || t.Partial && t.Program == ModeUnpack:
		copyArgs = append(copyArgs, "--atomic")
	case t.Part.Finish:
		copyArgs = append(copyArgs, "--finish")
		if t.Partial {
			copyArgs = append(copyArgs, "--check-listing")
		}
	case t.Part.Of > 0:
		// The finish lists the whole copy; a share alone cannot.
		copyArgs = append(copyArgs, fmt.Sprintf("--part=%d/%d", t.Part.Index, t.Part.Of))
	case t.Partial:
		copyArgs = append(copyArgs, "--check-listing")
	}
	return copyArgs
}

// newCgroup creates the cgroup of t's child, held to r.Limits with its
// memory limit raised by the RAMDISK's charge (ramdiskCharge), which it
// returns too.
func (r *Runner) newCgroup(ctx context.Context, t Task) (*cgroup.Group, int64, error) {
	limits := r.Limits
	ramdisk := ramdiskCharge(t.Ramdisk)
	if limits.Memory > 0 {
		limits.Memory += ramdisk
	}
	cg, err := r.Cgroups.New(ctx, fmt.Sprintf("job-%d-%s", t.Job, t.Phase), limits)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", t.Phase, LimitsHint(err))
	}
	return cg, ramdisk, nil
}

// stageOutput is what a child writes: its stderr, and its stdout (the
// built-in copy's progress, or more of a stage program's log), read from
// pipes into the capped log and the tail kept for error messages. The
// child writes into the pipes, never into the log file itself, so the cap
// holds whatever it does.
type stageOutput struct {
	capped     *capWriter
	tail       *tailWriter
	errR, errW *os.File
	outR, outW *os.File
	readers    sync.WaitGroup
}

// newOutput is a stage's output into logw (nil: discarded), capped at
// r.LogHead and r.LogTail; its pipes are not open yet. The caller closes
// capped once the stage has ended.
func (r *Runner) newOutput(logw io.Writer) *stageOutput {
	if logw == nil {
		logw = io.Discard
	}
	return &stageOutput{
		capped: &capWriter{w: logw, head: cmp.Or(r.LogHead, 1<<20), tail: cmp.Or(r.LogTail, 256<<10)},
		tail:   &tailWriter{max: 2048},
	}
}

// openPipes opens the stderr and stdout pipes; on an error none is left
// open.
func (o *stageOutput) openPipes() error {
	var err error
	if o.errR, o.errW, err = os.Pipe(); err != nil {
		return err
	}
	if o.outR, o.outW, err = os.Pipe(); err != nil {
		o.errR.Close()
		o.errW.Close()
		return err
	}
	return nil
}

// read starts the readers of both pipes: stderr into the log and the tail;
// stdout as the built-in copy's progress (lines for progress, the rest to
// the log), or discarded if custom (a stage program's stdout is its stderr's
// pipe).
func (o *stageOutput) read(progress func(Progress), custom bool) {
	o.readers.Add(2)
	go func() {
		defer o.readers.Done()
		io.Copy(io.MultiWriter(o.capped, o.tail), o.errR)
	}()
	go func() {
		defer o.readers.Done()
		if custom {
			io.Copy(io.Discard, o.outR)
			return
		}
		readProgress(o.outR, progress, o.capped)
	}()
}

// childCmd is the command of t's child: args run in dir as t.User, with
// nothing of root's environment, no stdin, stdout and stderr out's pipes
// (a stage program's stdout joins its stderr: all of it is log), and the
// write end of img's stream as fd 3 (img nil: none). It runs in a process
// group of its own, is killed when the thread that starts it ends, is
// forked straight into cg, and has the namespaces cloneflags asks for.
func childCmd(t Task, args []string, dir string, out *stageOutput, img *image, cg *cgroup.Group, cloneflags uintptr) *exec.Cmd {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(t)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out.outW, out.errW
	if t.custom() {
		cmd.Stdout = out.errW
	}
	if img != nil {
		cmd.ExtraFiles = []*os.File{img.w}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: t.User.UID, Gid: t.User.GID, Groups: t.User.Groups},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
		UseCgroupFD: true,
		CgroupFD:    cg.FD(),
		Cloneflags:  cloneflags,
	}
	return cmd
}

// startConfined starts cmd and returns once it has started (or failed to);
// done then receives what cmd.Wait returns.
//
// The child is started from a thread of its own, locked to this
// goroutine and never unlocked, for two reasons. The parent-death
// signal fires when the thread that started the child exits, so the
// thread lives until the child is done. And no_new_privs, which Go's
// SysProcAttr cannot set, is set on that thread, so the child inherits
// it across fork and execve and neither it nor anything it starts can
// gain privileges through a setuid, setgid or file-capability program.
// The flag cannot be cleared; since the goroutine exits still locked,
// Go ends the thread with it instead of running other goroutines on it,
// and the daemon's other threads never carry it.
func startConfined(cmd *exec.Cmd, cg *cgroup.Group) (done <-chan error, err error) {
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Go never ends the main thread: marked and moved into
			// the stage's cgroup v1 directories, it would stay there.
			runtime.UnlockOSThread()
			started <- errors.New("starting a stage: the goroutine runs on the process's main thread, which must run the main goroutine alone (runtime.LockOSThread in package main's init)")
			return
		}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- fmt.Errorf("setting no_new_privs for the child: %w", err)
			return
		}
		// On a hybrid host the limits cgroup v2 lacks are set in cgroup
		// v1 hierarchies, which the child enters by being forked from a
		// thread in them.
		if err := cg.EnterThread(); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	return waited, <-started
}

// started hands the stream to the child once startErr says whether it
// started: only the child holds the pipe's write end now, and the builder
// runs while it packs; a child that never started leaves the builder an
// empty result.
func (img *image) started(ctx context.Context, startErr error) {
	img.w.Close()
	if startErr == nil {
		go img.build(ctx)
	} else {
		img.done <- imageResult{}
	}
}

// waitChild waits for the started child's end (done); should ctx end first,
// it kills the child's whole cgroup, setsid or not, and waits for it then.
func waitChild(ctx context.Context, cg *cgroup.Group, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cg.Kill(context.Background()) // the whole tree, setsid or not
		return <-done
	}
}

// endStage ends a stage whose child has ended: whatever the child left
// behind goes with its cgroup; then the pipes are closed on every end and
// the readers finish. What the kernel did at the group's limits is read
// first, and returned: the counts go with the group. The error is the
// cgroup's removal's, or a reader that did not finish.
func endStage(cg *cgroup.Group, out *stageOutput) (cgroup.Events, error) {
	events := cg.Events()
	out.outW.Close()
	out.errW.Close()
	cerr := cg.Close()
	// Only the cgroup's processes held the write ends, so the readers see
	// the end now; should anything still hold one, closing the read ends
	// stops them rather than this stage waiting on it forever.
	finished := make(chan struct{})
	go func() { out.readers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		cerr = errors.Join(cerr, errors.New("a process outside the stage's cgroup held its output open"))
	}
	out.outR.Close()
	out.errR.Close()
	<-finished
	return events, cerr
}

// childError explains how a stage's child failed: with err, or (err nil)
// by the kernel's OOM kills at the stage's memory limit.
func (r *Runner) childError(ctx context.Context, t Task, err error, events cgroup.Events, ramdisk int64, tail *tailWriter, custom bool, cloneflags uintptr) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s stopped: %w", t.Phase, ctx.Err())
	}
	msg := strings.TrimSpace(tail.String())
	if events.OOMKills > 0 && r.Limits.Memory > 0 {
		// The whole stage was killed (memory.oom.group in cgroup v2,
		// the group's OOM watch in v1).
		var beside string
		if ramdisk > 0 {
			beside = fmt.Sprintf(", beside the %s of its RAMDISK", units.FormatSize(ramdisk))
		}
		return fmt.Errorf("%s killed: its processes together needed more than the %s of memory a stage may use%s (limits.stage_memory)%s",
			t.Phase, units.FormatSize(r.Limits.Memory), beside, lastLine(msg))
	}
	var hit string
	if events.PidsMax > 0 {
		hit = fmt.Sprintf(", after %d of its forks failed at the %d processes and threads a stage may run (limits.stage_pids)", events.PidsMax, r.Limits.Pids)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && custom:
		return fmt.Errorf("%s program %s failed (%v%s)%s", t.Phase, t.Program, exit, hit, lastLine(msg))
	case errors.As(err, &exit):
		return fmt.Errorf("%s failed%s%s", t.Phase, hit, lastLine(msg))
	case custom:
		return fmt.Errorf("%s program %s could not be started as %s: %w%s", t.Phase, t.Program, t.User.Name, err, netHint(err, cloneflags))
	default:
		return fmt.Errorf("%s could not start: %w%s", t.Phase, err, netHint(err, cloneflags))
	}
}

// ramdiskCharge is the memory a stage may use for its RAMDISK beside
// limits.stage_memory: the size of the RAMDISK if it is a tmpfs on this host
// (engine local). A tmpfs page is charged to the cgroup of the process that
// writes it, and with no swap it cannot be reclaimed, so a stage-in filling
// the job's RAMDISK would otherwise be killed at stage_memory; the tmpfs'
// own size already bounds those pages. 0 for any other file system, such as
// a Gluster volume's FUSE mount, whose pages the bricks' processes hold.
func ramdiskCharge(dir string) int64 {
	var st unix.Statfs_t
	if dir == "" || unix.Statfs(dir, &st) != nil || st.Type != unix.TMPFS_MAGIC {
		return 0
	}
	return int64(st.Blocks) * st.Bsize
}

// netHint explains a start refused for want of the privilege a network
// namespace of its own needs.
func netHint(err error, cloneflags uintptr) string {
	if cloneflags&syscall.CLONE_NEWNET == 0 || !errors.Is(err, syscall.EPERM) {
		return ""
	}
	return " (a network namespace of its own for the stage needs CAP_SYS_ADMIN; limits.stage_network = \"host\" does without)"
}

// LimitsHint adds to an error of cgroup.Parent's Enable or New the config
// keys that would stage without the limits this host cannot enforce.
func LimitsHint(err error) error {
	var ce *cgroup.ControllerError
	if !errors.As(err, &ce) {
		return err
	}
	key := map[string]string{"cpu": "limits.stage_cpu", "memory": "limits.stage_memory", "pids": "limits.stage_pids"}
	var keys []string
	for _, c := range ce.Controllers {
		keys = append(keys, key[c]+` = "0"`)
	}
	return fmt.Errorf("%w; or, to stage without that limit, set %s", err, strings.Join(keys, ", "))
}

// capWriter passes the first head bytes through to w, keeps the last tail
// bytes of the rest, and on Close writes a line saying how much was cut
// and then that tail: a stage program cannot fill the state partition.
// It is safe for concurrent use (a stage's stderr and stdout both feed it).
type capWriter struct {
	mu         sync.Mutex
	w          io.Writer
	head, tail int
	written    int64
	ring       []byte
	cut        int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := int64(c.head) - c.written; room > 0 {
		k := min(int64(len(p)), room)
		if _, err := c.w.Write(p[:k]); err != nil {
			return 0, err
		}
		c.written += k
		p = p[k:]
	}
	if len(p) > 0 {
		c.ring = append(c.ring, p...)
		if over := len(c.ring) - c.tail; over > 0 {
			c.cut += int64(over)
			c.ring = append(c.ring[:0], c.ring[over:]...)
		}
	}
	return n, nil
}

// Close writes what was kept of the end.
func (c *capWriter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut > 0 {
		fmt.Fprintf(c.w, "\n[rsa: %d bytes of this stage's output cut here; the first %d and the last %d are kept]\n", c.cut, c.head, c.tail)
	}
	_, err := c.w.Write(c.ring)
	c.ring, c.cut = nil, 0
	return err
}

func lastLine(s string) string {
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}

// cleanEnv is the whole environment of a staging child: nothing of root's.
func cleanEnv(t Task) []string {
	home := t.User.Home
	if home == "" {
		home = "/"
	}
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"USER=" + t.User.Name,
		"LOGNAME=" + t.User.Name,
		"LANG=C.UTF-8",
		"RSA_JOB_ID=" + strconv.FormatInt(t.Job, 10),
		"RSA_PHASE=" + string(t.Phase),
		"RSA_RAMDISK=" + t.Ramdisk,
	}
}

func readProgress(r io.Reader, fn func(Progress), logw io.Writer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			fmt.Fprintln(logw, sc.Text())
			continue
		}
		if fn != nil && l.Progress != nil {
			fn(*l.Progress)
		}
		if d := l.Done; d != nil {
			fmt.Fprintf(logw, "copied %d files, %d bytes (%d already in place), %d dirs, %d symlinks, %d hard links in %.3fs\n",
				d.Files, d.Bytes, d.Skipped, d.Dirs, d.Links, d.HardLinks, l.Seconds)
		}
	}
	io.Copy(io.Discard, r)
}

// tailWriter keeps the last bytes written, for error messages.
type tailWriter struct {
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = w.buf[len(w.buf)-w.max:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string { return string(w.buf) }
