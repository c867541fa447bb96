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
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// TagVar is set in every staging child's environment, to the job's id, and
// OwnerVar to the daemon's state directory; at start a daemon kills leftover
// processes carrying its own tag (a crash leaves grandchildren of stage
// programs behind, which no parent-death signal reaches), and only those:
// another daemon's staging on the same host is not its to stop.
const (
	TagVar   = "RSA_STAGE_JOB"
	OwnerVar = "RSA_STAGE_DAEMON"
)

// Runner starts staging children. Self is the rsa binary, which users can
// execute (they run `rsa run` with it); Owner identifies the daemon (its
// state directory).
type Runner struct {
	Self  string
	Owner string
}

// Run runs t to its end as t.User. Cancelling ctx kills the child's whole
// process group. The built-in copy verifies stage-out content before it
// reports success.
func (r *Runner) Run(ctx context.Context, t Task) error {
	var args []string
	dir := "/"
	custom := t.Program != "" && !BuiltIn(t.Program)
	copyArgs := []string{r.Self, "copy", "--progress=json", "--json", "--sync"}
	if t.Phase == "stage-out" {
		copyArgs = append(copyArgs, "--verify") // before the RAMDISK may go
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
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(t, r.Owner)
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: t.User.UID, Gid: t.User.GID, Groups: t.User.Groups},
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	logw := t.Log
	if logw == nil {
		logw = io.Discard
	}
	tail := &tailWriter{max: 2048}
	cmd.Stderr = io.MultiWriter(logw, tail)
	var stdout io.ReadCloser
	var err error
	if custom {
		cmd.Stdout = logw
	} else if stdout, err = cmd.StdoutPipe(); err != nil {
		return err
	}

	// The parent-death signal fires when the thread that started the child
	// exits; keep it alive until the child is done.
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		if stdout != nil {
			readProgress(stdout, t.Progress, logw)
		}
		done <- cmd.Wait()
	}()
	err = <-done
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

func lastLine(s string) string {
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}

// cleanEnv is the whole environment of a staging child: nothing of root's,
// and the tags by which the daemon owner finds its leftovers.
func cleanEnv(t Task, owner string) []string {
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
		TagVar + "=" + strconv.FormatInt(t.Job, 10),
		OwnerVar + "=" + owner,
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

// KillLeftovers kills processes left by a previous run of the daemon owner:
// those whose environment carries TagVar and owner's OwnerVar and which run
// as a non-root user. It returns how many it signalled.
func KillLeftovers(owner string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !hasTag(env, owner) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/proc", e.Name()), &st) != nil || st.Uid == 0 {
			continue
		}
		if unix.Kill(pid, unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}

func hasTag(env []byte, owner string) bool {
	tagged, ours := false, false
	for _, kv := range strings.Split(string(env), "\x00") {
		tagged = tagged || strings.HasPrefix(kv, TagVar+"=")
		ours = ours || kv == OwnerVar+"="+owner
	}
	return tagged && ours
}
