package stage

import (
	"bufio"
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

	"github.com/rsa-hpc/rsa/internal/cgroup"
)

// Identity is who a staging child runs as.
type Identity struct {
	UID, GID uint32
	Groups   []uint32
	Name     string
	Home     string
}

// Task is one staging phase of one job.
type Task struct {
	Job     int64
	Phase   string // "stage-in" or "stage-out"
	User    Identity
	Program string // the user's stage program; "" for the built-in copy, or ModePack / ModeUnpack
	Ramdisk string // $1 of a stage program
	Data    string // $2: the input or output directory
	// Log receives the child's diagnostics and a stage program's output.
	Log io.Writer
	// Progress receives the built-in copy's progress.
	Progress func(Progress)
	// Private says that no one looks into the RAMDISK until a stage-in
	// ends and that a part of it lost meanwhile cannot go unnoticed (a
	// tmpfs on this host, whose loss the daemon sees): the built-in copy
	// and unpack then write final names at once (rsa copy --private). Not
	// for a distribute Gluster RAMDISK, where a failed rename is what
	// catches a brick emptied by its node's reboot mid-copy.
	Private bool
	// Degraded says that the daemon's check found a part of the RAMDISK
	// out of reach: a stage-out on an RSA node does not wait for its own
	// client to reach every part first (it would wait in vain).
	Degraded bool
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

// Runner starts staging children. Self is the rsa binary, which users can
// execute (they run `rsa run` with it). Every child and whatever it starts
// runs in a cgroup of its own below Cgroups, killed whole when the stage
// ends, however it ends.
type Runner struct {
	Self    string
	Cgroups *cgroup.Parent
	// BWLimit caps the bytes per second a built-in copy reads (0: no
	// cap); a job's own program is not held to it.
	BWLimit int64
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
	var args []string
	dir := "/"
	custom := t.Program != "" && !BuiltIn(t.Program)
	copyArgs := []string{r.Self, "copy", "--progress=json", "--json", "--sync"}
	if r.BWLimit > 0 {
		copyArgs = append(copyArgs, fmt.Sprintf("--bwlimit=%d", r.BWLimit))
	}
	if t.Phase == "stage-out" {
		copyArgs = append(copyArgs, "--verify") // before the RAMDISK may go
	} else if t.Private {
		copyArgs = append(copyArgs, "--private")
	}
	switch {
	case custom:
		args = []string{t.Program, t.Ramdisk, t.Data}
		dir = t.Ramdisk
	case t.Program == ModePack:
		args = append(copyArgs, "--pack", "--", t.Ramdisk, filepath.Join(t.Data, PackName(t.Job)))
	case t.Program == ModeUnpack:
		args = append(copyArgs, "--unpack", "--", t.Data, t.Ramdisk)
	case t.Phase == "stage-out":
		args = append(copyArgs, "--", t.Ramdisk, t.Data)
	default:
		args = append(copyArgs, "--", t.Data, t.Ramdisk)
	}
	cg, err := r.Cgroups.New(ctx, fmt.Sprintf("job-%d-%s", t.Job, t.Phase))
	if err != nil {
		return fmt.Errorf("%s: %w", t.Phase, err)
	}
	defer cg.Close()

	logw := t.Log
	if logw == nil {
		logw = io.Discard
	}
	capped := &capWriter{w: logw, head: cmpOr(r.LogHead, 1<<20), tail: cmpOr(r.LogTail, 256<<10)}
	defer capped.Close()
	tail := &tailWriter{max: 2048}
	// The child writes into pipes, never into the log file itself, so
	// the cap holds whatever it does; the read ends close once the cgroup
	// is gone, since only its processes hold the write ends.
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		errR.Close()
		errW.Close()
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(t)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = outW, errW
	if custom {
		cmd.Stdout = errW // a stage program's output is all log
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: t.User.UID, Gid: t.User.GID, Groups: t.User.Groups},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
		UseCgroupFD: true,
		CgroupFD:    cg.FD(),
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		io.Copy(io.MultiWriter(capped, tail), errR)
	}()
	go func() {
		defer readers.Done()
		if custom {
			io.Copy(io.Discard, outR)
			return
		}
		readProgress(outR, t.Progress, capped)
	}()

	// The parent-death signal fires when the thread that started the child
	// exits; keep it alive until the child is done.
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err = <-started; err == nil {
		select {
		case err = <-done:
		case <-ctx.Done():
			cg.Kill(context.Background()) // the whole tree, setsid or not
			err = <-done
		}
	}
	// Whatever the child left behind goes with its cgroup; then the pipes
	// are closed on every end and the readers finish.
	outW.Close()
	errW.Close()
	cerr := cg.Close()
	// Only the cgroup's processes held the write ends, so the readers see
	// the end now; should anything still hold one, closing the read ends
	// stops them rather than this stage waiting on it forever.
	finished := make(chan struct{})
	go func() { readers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		cerr = errors.Join(cerr, errors.New("a process outside the stage's cgroup held its output open"))
	}
	outR.Close()
	errR.Close()
	<-finished
	if err == nil && cerr != nil {
		return fmt.Errorf("%s: %w", t.Phase, cerr)
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s stopped: %w", t.Phase, ctx.Err())
	}
	msg := strings.TrimSpace(tail.String())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && custom:
		return fmt.Errorf("%s program %s failed (%v)%s", t.Phase, t.Program, exit, lastLine(msg))
	case errors.As(err, &exit):
		return fmt.Errorf("%s failed%s", t.Phase, lastLine(msg))
	case custom:
		return fmt.Errorf("%s program %s could not be started as %s: %w", t.Phase, t.Program, t.User.Name, err)
	default:
		return fmt.Errorf("%s could not start: %w", t.Phase, err)
	}
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
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
		"RSA_PHASE=" + t.Phase,
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
