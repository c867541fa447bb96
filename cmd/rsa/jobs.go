package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// specFlags are the job options shared by run and submit (the thesis'
// RSA_* variables).
type specFlags struct {
	in, out, stageIn, stageOut, delay, capacity string
	input, output                               string
	nodes                                       int
}

func (f *specFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.in, "in", "", "input directory: staged into RAM, then served at this path (RSA_DATA_IN)")
	fl.StringVar(&f.out, "out", "", "output directory: served from RAM, staged back here after the job (RSA_DATA_OUT)")
	fl.StringVar(&f.input, "input", "", "how the input reaches the job: 'image' (one read-only image, mounted at the input path) or 'files' (a read-write copy, for a job that writes into its input directory); default from the daemon (RSA_INPUT)")
	fl.StringVar(&f.output, "output", "", "how the output is caught: 'shared' (one RAM file system all the job's nodes share, the default) or 'private' (one of its own per compute node, merged at stage-out) (RSA_OUTPUT)")
	fl.StringVar(&f.stageIn, "stage-in", "", "program run as you instead of the copy, $1=RAMDISK $2=input dir; or 'unpack': extract the input's *.tar files (RSA_STAGE_IN)")
	fl.StringVar(&f.stageOut, "stage-out", "", "program run as you instead of the copy, $1=RAMDISK $2=output dir; or 'pack': one verified tar, rsa-job-ID.tar (RSA_STAGE_OUT)")
	fl.StringVar(&f.delay, "delay", "", "switch the RAM from input to output this long after start, e.g. 300 or 5m (RSA_DELAY; default from the daemon)")
	fl.StringVar(&f.capacity, "capacity", "", "RAM to request, e.g. 8G (default without a scheduler: the input's size + output_headroom; with one: by compute nodes and the site's proportion)")
	fl.IntVar(&f.nodes, "nodes", 1, "compute nodes the job uses (RSA nodes are assigned in proportion)")
}

func absPath(flag, p string) (string, error) {
	if p == "" {
		return "", nil
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--%s %q: %w", flag, p, err)
	}
	return a, nil
}

func (f *specFlags) spec() (job.Spec, error) {
	s := job.Spec{ComputeNodes: f.nodes, Delay: -1, InputMode: f.input, OutputMode: f.output}
	var err error
	for _, x := range []struct {
		flag string
		in   string
		out  *string
	}{{"in", f.in, &s.Input}, {"out", f.out, &s.Output}, {"stage-in", f.stageIn, &s.StageIn}, {"stage-out", f.stageOut, &s.StageOut}} {
		if stage.BuiltIn(x.in) {
			*x.out = x.in
			continue
		}
		if *x.out, err = absPath(x.flag, x.in); err != nil {
			return s, err
		}
	}
	if f.delay != "" {
		if s.Delay, err = units.ParseDuration(f.delay); err != nil {
			return s, fmt.Errorf("--delay: %w", err)
		}
	}
	if f.capacity != "" {
		if s.Capacity, err = units.ParseSize(f.capacity); err != nil {
			return s, fmt.Errorf("--capacity: %w", err)
		}
	}
	if f.nodes < 1 {
		return s, fmt.Errorf("--nodes %d: a job uses at least one compute node", f.nodes)
	}
	// Checked here, as the user who will run them (the daemon does not look
	// at user files with root's rights).
	for _, p := range []struct{ flag, path string }{{"stage-in", s.StageIn}, {"stage-out", s.StageOut}} {
		if p.path == "" || stage.BuiltIn(p.path) {
			continue
		}
		if st, err := os.Stat(p.path); err != nil || !st.Mode().IsRegular() || unix.Access(p.path, unix.X_OK) != nil {
			return s, fmt.Errorf("--%s %q is not an executable file you can run (chmod +x it)", p.flag, p.path)
		}
	}
	return s, nil
}

// reporter prints a job's progress to stderr: a line that rewrites itself
// on a terminal, a line per change otherwise.
type reporter struct {
	tty  bool
	last string
}

func newReporter() *reporter {
	_, err := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	return &reporter{tty: err == nil}
}

// say prints a message, which may quote the daemon and through it users.
func (r *reporter) say(format string, args ...any) {
	r.clear()
	fmt.Fprintln(os.Stderr, "rsa: "+textsafe.Line(fmt.Sprintf(format, args...)))
}

func (r *reporter) clear() {
	if r.tty && r.last != "" {
		fmt.Fprint(os.Stderr, "\r\033[K")
		r.last = ""
	}
}

func (r *reporter) show(j *api.JobView) {
	line := textsafe.Line(fmt.Sprintf("job %d %s/%s %s", j.ID, j.State, j.RSA, j.ProgressLine()))
	if line == r.last {
		return
	}
	if r.tty {
		fmt.Fprint(os.Stderr, "\r\033[K"+line)
	} else if stateOf(r.last) != stateOf(line) {
		fmt.Fprintln(os.Stderr, "rsa: "+line)
	}
	r.last = line
}

func stateOf(line string) string {
	f := strings.Fields(line)
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// daemonGrace is how long clients wait out a daemon that is down (being
// restarted) before giving up.
const daemonGrace = 10 * time.Minute

// patiently calls fn until it succeeds, fails for a reason other than the
// daemon being unreachable, or the daemon stays away longer than
// daemonGrace.
func patiently(ctx context.Context, r *reporter, fn func() error) error {
	return waitOutDaemon(ctx, daemonGrace, func() {
		r.say("the rsa daemon is unreachable; waiting for it to come back")
	}, fn)
}

// waitOutDaemon calls fn until it succeeds, fails for a reason other than
// the daemon being unreachable, or the daemon stays away longer than grace
// (with grace 0, at once). onDown, if set, hears when the daemon first
// fails to answer.
func waitOutDaemon(ctx context.Context, grace time.Duration, onDown func(), fn func() error) error {
	var since time.Time
	for {
		err := fn()
		if err == nil || !api.Unreachable(err) || ctx.Err() != nil || grace <= 0 {
			return err
		}
		if since.IsZero() {
			since = time.Now()
			if onDown != nil {
				onDown()
			}
		} else if time.Since(since) > grace {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// poll follows a job until done says so, showing progress.
func poll(ctx context.Context, c *api.Client, j *api.JobView, r *reporter, done func(*api.JobView) bool) (*api.JobView, error) {
	for !done(j) {
		r.show(j)
		var next *api.JobView
		err := patiently(ctx, r, func() (err error) {
			next, err = c.Job(ctx, j.ID, j.Version, time.Second)
			return err
		})
		if err != nil {
			r.clear()
			return nil, err
		}
		j = next
	}
	r.clear()
	return j, nil
}

func runCmd(g *globals) *cobra.Command {
	var f specFlags
	var noWait bool
	var jobID int64
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARGS...]",
		Short: "Run a command with its input in RAM and its output caught in RAM",
		Long: `Run COMMAND as you with RSA: the daemon builds a RAMDISK for the job, stages
--in into it, and mounts it over --in when COMMAND starts. After --delay it
switches the RAM to --out. When COMMAND exits, rsa run returns its exit status
at once; the daemon stages the output back to --out, verifies it, and frees
the RAM (follow with 'rsa wait JOB').

Without --no-wait, COMMAND starts once the input is in RAM. With --no-wait it
starts at once; input not yet staged is read from disk (the RAMDISK then
serves only the output), as the thesis' fallback does.

Example:
  rsa run --in ~/sim/input --out ~/sim/results --delay 60 --capacity 8G -- ./sim`,
		Args: cobra.MinimumNArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			return runJob(cmd.Context(), c, &f, jobID, noWait, args)
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "start COMMAND at once, even before the input is in RAM")
	cmd.Flags().Int64Var(&jobID, "job", 0, "run in a job prepared with 'rsa submit' instead of submitting one")
	return cmd
}

func runJob(ctx context.Context, c *api.Client, f *specFlags, jobID int64, noWait bool, args []string) error {
	sig := relaySignals(ctx)
	defer sig.stop()
	ctx = sig.ctx
	if _, err := exec.LookPath(args[0]); err != nil {
		return fmt.Errorf("command %q: %w", args[0], err)
	}
	r := newReporter()
	var j *api.JobView
	var err error
	if jobID != 0 {
		j, err = c.Job(ctx, jobID, 0, 0)
	} else {
		var spec job.Spec
		if spec, err = f.spec(); err != nil {
			return err
		}
		j, err = c.Submit(ctx, api.SubmitRequest{Spec: spec, Attach: true})
	}
	if err != nil {
		return interrupted(ctx, r, c, 0, err)
	}
	id := j.ID
	r.say("job %d submitted", id)
	if j.Spec.Sized != "" {
		r.say("job %d: RAMDISK of %s", id, textsafe.Line(j.Spec.Sized))
	}
	if !noWait {
		// Ready, or nothing more to wait for: not eligible, stage-in
		// failed, or the job was already started or ended elsewhere.
		j, err = poll(ctx, c, j, r, func(j *api.JobView) bool { return lifecycle.SettledBeforeStart(j.Machine()) })
		if err != nil {
			return interrupted(ctx, r, c, id, err)
		}
		switch m, phase := j.Machine(), lifecycle.PhaseOf(j.RSA); {
		case m.Ended():
			return fmt.Errorf("job %d ended before its command started: %s", j.ID, textsafe.Line(j.Error))
		case m.Runs():
			return fmt.Errorf("job %d is already running a command; a job runs one (submit another)", j.ID)
		case phase == lifecycle.PhaseAborted:
			cancelJob(c, j.ID, r, "stage-in failed")
			return fmt.Errorf("job %d: %s; the command was not run (fix the input or stage-in program, or use --no-wait to read from disk)", j.ID, textsafe.Line(j.Error))
		case phase == lifecycle.PhaseWithoutRSA:
			r.say("job %d runs without RSA: %s", j.ID, j.Error)
		default:
			r.say("job %d: input staged in RAM", j.ID)
		}
	}
	if err := patiently(ctx, r, func() (err error) {
		j, err = c.Act(ctx, id, api.VerbStart, api.ActOptions{Attach: true})
		return err
	}); err != nil {
		return interrupted(ctx, r, c, id, err)
	}
	j, err = poll(ctx, c, j, r, func(j *api.JobView) bool { return !lifecycle.BeingMounted(j.RSA) })
	if err != nil {
		return interrupted(ctx, r, c, id, err)
	}
	inRAM := lifecycle.InRAM(j.RSA)
	switch {
	case inRAM && lifecycle.PhaseOf(j.RSA) == lifecycle.PhaseInUseIn:
		r.say("job %d: RAM serves %s", j.ID, j.Spec.Input)
	case inRAM:
		r.say("job %d: RAM catches %s", j.ID, j.Spec.Output)
	default:
		if j.Error != "" {
			r.say("job %d: reading and writing on disk (%s)", j.ID, j.Error)
		}
	}

	status, ran, err := runCommand(sig, args, j.ID)
	if err != nil {
		return interrupted(ctx, r, c, j.ID, err)
	}
	if err := finishJob(ctx, c, j.ID, r); err != nil {
		return err
	}
	after := fmt.Sprintf("job %d: command exited with status %d after %s", j.ID, status, ran.Round(time.Millisecond))
	switch {
	case !inRAM:
		r.say("%s; it ran on disk, there is nothing to stage out", after)
	case j.Spec.Output == "":
		r.say("%s; its RAM is released in the background", after)
	default:
		r.say("%s; staging out in the background (rsa wait %d)", after, j.ID)
	}
	if status != 0 {
		return exitCode(status)
	}
	return nil
}

// signals is how rsa run takes SIGINT, SIGTERM and SIGHUP: while COMMAND
// runs, it passes them on; at any other time the first one ends ctx, with
// an interrupt as its cause, and rsa run stops waiting (for the daemon, for
// the input) and exits.
type signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	done   chan struct{}

	mu   sync.Mutex
	proc *os.Process // COMMAND, while it runs
}

func relaySignals(parent context.Context) *signals {
	// main ends its context on SIGINT and SIGTERM; here those may be
	// meant for COMMAND, so rsa run decides itself what each means.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	s := &signals{ctx: ctx, cancel: cancel, ch: make(chan os.Signal, 4), done: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go s.relay()
	return s
}

func (s *signals) relay() {
	for {
		select {
		case <-s.done:
			return
		case sig := <-s.ch:
			s.mu.Lock()
			// Signal fails once COMMAND has been waited for.
			if s.proc == nil || s.proc.Signal(sig) != nil {
				s.cancel(interrupt{sig.(syscall.Signal)})
			}
			s.mu.Unlock()
		}
	}
}

func (s *signals) stop() {
	signal.Stop(s.ch)
	close(s.done)
	s.cancel(nil)
}

// start starts cmd, unless a signal came first; from then on, signals go
// to it.
func (s *signals) start(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.proc = cmd.Process
	return nil
}

func (s *signals) exited() {
	s.mu.Lock()
	s.proc = nil
	s.mu.Unlock()
}

// interrupt is a signal that ended rsa run's wait.
type interrupt struct{ sig syscall.Signal }

func (i interrupt) Error() string { return "interrupted by " + unix.SignalName(i.sig) }

// status is the exit status a shell gives a process the signal killed.
func (i interrupt) status() exitCode { return exitCode(128 + int(i.sig)) }

// interrupted is how rsa run ends when err cut short a wait before COMMAND
// ran: if a signal caused it, the job (id, if any) is cancelled and rsa run
// exits with the signal's status; otherwise err stands.
func interrupted(ctx context.Context, r *reporter, c *api.Client, id int64, err error) error {
	var in interrupt
	if !errors.As(context.Cause(ctx), &in) {
		return err
	}
	if id == 0 {
		r.say("%v while waiting for the rsa daemon", in)
	} else {
		cancelJob(c, id, r, in.Error()+" before the command started")
	}
	return in.status()
}

// cancelJob cancels job id, quickly: rsa run is on its way out. Should the
// daemon not hear it, it finishes the job when it sees rsa run gone.
func cancelJob(c *api.Client, id int64, r *reporter, why string) {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if _, err := c.Act(ctx, id, api.VerbCancel, api.ActOptions{}); err != nil {
		r.say("job %d: %s; cancelling it failed: %v (rsa cancel %d)", id, why, err, id)
		return
	}
	r.say("job %d cancelled: %s", id, why)
}

// runCommand runs the job's command as the caller, passing signals on, and
// returns its exit status the way a shell reports it. It fails only if a
// signal came before the command started.
func runCommand(sig *signals, args []string, id int64) (int, time.Duration, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), fmt.Sprintf("RSA_JOB_ID=%d", id))
	// rsa run is the job: if it is killed, its command goes too, and the
	// daemon (watching this process) finishes the job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread() // the death signal follows the starting thread
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := sig.start(cmd); err != nil {
		var in interrupt
		if errors.As(err, &in) {
			return 0, 0, err
		}
		fmt.Fprintln(os.Stderr, "rsa:", err)
		return 127, 0, nil
	}
	err := cmd.Wait()
	sig.exited()
	ran := time.Since(start)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), ran, nil
		}
		return ee.ExitCode(), ran, nil
	}
	if err != nil {
		return 1, ran, nil
	}
	return 0, ran, nil
}

// finishJob tells the daemon the command is over, waiting out a daemon
// restart, unless a signal ends the wait. Should that fail, the daemon
// still finishes the job when it sees this process gone.
func finishJob(ctx context.Context, c *api.Client, id int64, r *reporter) error {
	err := patiently(ctx, r, func() error {
		actx, stop := context.WithTimeout(ctx, 30*time.Second)
		defer stop()
		_, err := c.Act(actx, id, api.VerbFinish, api.ActOptions{})
		return err
	})
	var in interrupt
	if errors.As(context.Cause(ctx), &in) {
		r.say("job %d: %v before the daemon heard that the command ended (it finishes the job when it sees this process gone)", id, in)
		return in.status()
	}
	if err != nil {
		r.say("job %d: could not report the end of the command: %v (the daemon finishes the job when it sees this process gone)", id, err)
	}
	return nil
}

func submitCmd(g *globals) *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "submit [flags]",
		Short: "Prepare a job: build its RAMDISK and stage its input now",
		Long: `Submit a job without running it: RSA builds the RAMDISK and stages the input
at once. Run the command later with 'rsa run --job ID -- COMMAND', or cancel
with 'rsa cancel ID'. Prints the job id.`,
		Args: cobra.NoArgs,
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, _ []string) error {
			spec, err := f.spec()
			if err != nil {
				return err
			}
			j, err := c.Submit(cmd.Context(), api.SubmitRequest{Spec: spec})
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(os.Stdout, j)
			}
			if j.Spec.Sized != "" {
				fmt.Fprintf(os.Stderr, "rsa: job %d: RAMDISK of %s\n", j.ID, textsafe.Line(j.Spec.Sized))
			}
			fmt.Println(j.ID)
			return nil
		}),
	}
	f.add(cmd)
	addJSON(cmd, g)
	return cmd
}

func statusCmd(g *globals) *cobra.Command {
	var watch, all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show jobs with their job-state, rsa-state, RAM and staging progress",
		Args:  cobra.NoArgs,
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, _ []string) error {
			for {
				js, err := c.Jobs(cmd.Context(), all)
				if err != nil {
					return err
				}
				if g.json {
					return printJSON(os.Stdout, map[string]any{"jobs": js})
				}
				if watch {
					fmt.Print("\033[H\033[2J")
					fmt.Println(time.Now().Format(time.DateTime))
				}
				printJobs(js)
				if !watch {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(2 * time.Second):
				}
			}
		}),
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "refresh every 2 seconds")
	cmd.Flags().BoolVar(&all, "all", false, "include ended jobs")
	addJSON(cmd, g)
	return cmd
}

func printJobs(js []api.JobView) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	// The scheduler's job id, when jobs come from one (Slurm).
	sched := slices.ContainsFunc(js, func(j api.JobView) bool { return j.Spec.SchedulerID != "" })
	head := "JOB\tUSER\tJOB-STATE\tRSA-STATE\tNODES\tRAM USED/ALLOC\tINPUT\tPROGRESS"
	if sched {
		head = "JOB\tSLURM\tUSER\tJOB-STATE\tRSA-STATE\tNODES\tRAM USED/ALLOC\tINPUT\tPROGRESS"
	}
	fmt.Fprintln(w, head)
	for _, j := range js {
		ram := "-"
		if j.Capacity() > 0 && lifecycle.HoldsNodes(j.RSA) {
			ram = units.FormatSize(j.Used) + "/" + units.FormatSize(j.Capacity())
		}
		nodes := strings.Join(j.Nodes(), ",")
		if nodes == "" || !lifecycle.HoldsNodes(j.RSA) {
			nodes = "-"
		}
		note := j.ProgressLine()
		if phase := lifecycle.PhaseOf(j.RSA); note == "" && (lifecycle.NeedsAdmin(j.RSA) || phase == lifecycle.PhaseWithoutRSA || phase == lifecycle.PhaseAborted) {
			note = j.Error
		}
		if note == "" && !lifecycle.Staging(j.RSA) {
			note = j.Staged.String()
		}
		row := []string{strconv.FormatInt(j.ID, 10)}
		if sched {
			row = append(row, cmp.Or(j.Spec.SchedulerID, "-"))
		}
		// How the input reaches the job: image, files, or "-" for a
		// job without input (or a record from before the modes).
		row = append(row, j.User, string(j.State), string(j.RSA), nodes, ram, cmp.Or(j.Spec.InputMode, "-"), note)
		// Every cell is one line without tabs, whatever its text.
		for i := range row {
			row[i] = textsafe.Line(row[i])
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
}

func waitCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait JOB",
		Short: "Wait until a job's output is staged out and its RAM freed; report the result",
		Long: `Block until the job is over for RSA: its output staged out and verified and its
RAMDISK destroyed (exit 0), or stage-out or teardown failed and the job waits
for an administrator, or its output was lost with its RAMDISK (exit 1, with
the reason).`,
		Args: cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			id, err := jobRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			done := func(j *api.JobView) bool { return j.Machine().Done() || lifecycle.NeedsAdmin(j.RSA) }
			j, err := c.Job(cmd.Context(), id, 0, 0)
			if err != nil {
				return err
			}
			if j, err = poll(cmd.Context(), c, j, &reporter{}, done); err != nil {
				return err
			}
			if g.json {
				printJSON(os.Stdout, j)
			}
			if lifecycle.NeedsAdmin(j.RSA) {
				return fmt.Errorf("job %d is %s: %s; its RAM is kept at %s until an administrator runs 'rsa retry %d' or 'rsa discard %d'",
					id, textsafe.Line(string(j.RSA)), textsafe.Line(j.Error), textsafe.Line(j.Ramdisk), id, id)
			}
			if lifecycle.PhaseOf(j.RSA) == lifecycle.PhaseOutputLost {
				return fmt.Errorf("job %d ended, but RSA lost its output: %s", id, textsafe.Line(j.Error))
			}
			evs, _, _ := c.Events(cmd.Context(), id)
			for _, e := range evs {
				if e.Kind == string(lifecycle.EvDiscard) {
					return fmt.Errorf("job %d ended, but an administrator discarded its output", id)
				}
			}
			if !g.json {
				msg := "done; RAM released"
				for _, e := range evs {
					if e.RSAState != lifecycle.DoneStagingOut {
						continue
					}
					// RSA verifies what its own mover wrote; a stage-out
					// program of the user's vouches for itself.
					if p := j.Spec.StageOut; p == "" || stage.BuiltIn(p) {
						msg = "output staged out and verified; RAM released"
					} else {
						msg = "output staged out by " + textsafe.Line(p) + " (it exited 0; RSA does not re-read its copy); RAM released"
					}
				}
				fmt.Printf("%s: %s\n", jobName(j), msg)
			}
			return nil
		}),
	}
	addJSON(cmd, g)
	return cmd
}

func cancelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "End a job: stop staging, stage out what its output holds, free its RAM",
		Args:  cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			return act(cmd.Context(), g, c, args[0], api.VerbCancel)
		}),
	}
	addJSON(cmd, g)
	return cmd
}

func retryCmd(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "retry JOB",
		Short: "Retry a failed stage-out (the job's user or root) or teardown (root)",
		Long: `retry stages a job's output out again after its stage-out failed
(STAGE_OUT_FAILED): its user or root may. With --to DIR the output goes to
DIR instead of the job's output directory, for instance when that one's
quota is full: DIR must be a directory the job's user may write, as the output
directory had to be. Only root retries a failed teardown (TEARDOWN_FAILED).`,
		Args: cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			if to != "" {
				abs, err := filepath.Abs(to)
				if err != nil {
					return err
				}
				to = abs
			}
			return actWith(cmd.Context(), g, c, args[0], api.VerbRetry, api.ActOptions{To: to})
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "stage the output out to this directory instead (one the job's user may read and write)")
	addJSON(cmd, g)
	return cmd
}

func discardCmd(g *globals) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "discard JOB",
		Short: "Give up a failed stage-out's output and free its RAM (the job's user or root; irreversible)",
		Long: `discard gives up the output a failed stage-out left in RAM
(STAGE_OUT_FAILED) and frees its RAM: the output is lost for good. The
job's user or root may. A user is asked to confirm by typing the job's
number, or gives --yes (needed where there is no terminal to ask on).`,
		Args: cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			ctx := cmd.Context()
			if !yes && os.Geteuid() != 0 {
				id, err := jobRef(ctx, c, args[0])
				if err != nil {
					return err
				}
				j, err := c.Job(ctx, id, 0, 0)
				if err != nil {
					return hintSlurm(err, args[0])
				}
				// Only the job's user is asked: the daemon refuses
				// anyone else's discard, and says so.
				if j.UID == uint32(os.Getuid()) {
					_, err = unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
					if err := confirmDiscard(j, os.Stdin, os.Stderr, err == nil); err != nil {
						return err
					}
				}
			}
			return actWith(ctx, g, c, args[0], api.VerbDiscard, api.ActOptions{})
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "discard without asking")
	addJSON(cmd, g)
	return cmd
}

// confirmDiscard asks on a terminal, before a user discards job j's
// output, for j's number typed back; without a terminal it refuses, as
// nothing can be asked. What it prints of the job is the daemon's and may
// quote the user: it is made one safe line.
func confirmDiscard(j *api.JobView, in io.Reader, out io.Writer, terminal bool) error {
	if !terminal {
		return fmt.Errorf("discarding %s loses its output for good: give --yes to confirm (there is no terminal to ask on)", jobName(j))
	}
	fmt.Fprintf(out, "%s is %s", jobName(j), textsafe.Line(string(j.RSA)))
	if j.Error != "" {
		fmt.Fprintf(out, ": %s", textsafe.Line(j.Error))
	}
	fmt.Fprintf(out, "\nIts output is held only in RAM; discarding loses it for good.\nType %d to discard it: ", j.ID)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if strings.TrimSpace(line) != strconv.FormatInt(j.ID, 10) {
		return fmt.Errorf("not discarded: %s keeps its output", jobName(j))
	}
	return nil
}

func act(ctx context.Context, g *globals, c *api.Client, arg, verb string) error {
	return actWith(ctx, g, c, arg, verb, api.ActOptions{})
}

func actWith(ctx context.Context, g *globals, c *api.Client, arg, verb string, o api.ActOptions) error {
	id, err := jobRef(ctx, c, arg)
	if err != nil {
		return err
	}
	j, err := c.Act(ctx, id, verb, o)
	if err != nil {
		return hintSlurm(err, arg)
	}
	if g.json {
		return printJSON(os.Stdout, j)
	}
	fmt.Printf("%s: %s\n", jobName(j), textsafe.Line(string(j.State)+"/"+string(j.RSA)))
	return nil
}

// jobName is "job 17", or "job 17 (Slurm 4242)" for a Slurm job's.
func jobName(j *api.JobView) string {
	if j.Spec.SchedulerID != "" {
		return fmt.Sprintf("job %d (Slurm %s)", j.ID, textsafe.Line(j.Spec.SchedulerID))
	}
	return fmt.Sprintf("job %d", j.ID)
}

// hintSlurm adds to a "not found" for a plain number that it may have
// been meant as a Slurm job id.
func hintSlurm(err error, arg string) error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && !strings.HasPrefix(arg, "slurm:") {
		return fmt.Errorf("%w (if %s is a Slurm job id, write slurm:%s)", err, textsafe.Line(arg), textsafe.Line(arg))
	}
	return err
}

func logCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log JOB",
		Short: "Print a job's timestamped events and its staging log",
		Args:  cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			id, err := jobRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			evs, stageLog, err := c.Events(cmd.Context(), id)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(os.Stdout, map[string]any{"events": evs, "stage_log": stageLog})
			}
			for _, e := range evs {
				fmt.Printf("%d.%03d %s job %d %s\n", e.At.Unix(), e.At.Nanosecond()/1e6, e.At.UTC().Format("15:04:05"), id, textsafe.Line(e.Message))
			}
			if stageLog != "" {
				// The staging log is what the user's programs wrote.
				fmt.Printf("--- staging log ---\n%s", textsafe.Text(stageLog))
			}
			return nil
		}),
	}
	addJSON(cmd, g)
	return cmd
}

func nodesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Show RSA nodes: capacity, RAM allocated and the jobs holding it",
		Args:  cobra.NoArgs,
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, _ []string) error {
			ns, err := c.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(os.Stdout, map[string]any{"nodes": ns})
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NODE\tENGINE\tCAPACITY\tALLOCATED\tFREE\tJOBS\tSTATE")
			for _, n := range ns {
				jobs := "-"
				if len(n.Jobs) > 0 {
					jobs = strings.Trim(fmt.Sprint(n.Jobs), "[]")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", textsafe.Line(n.Name), textsafe.Line(n.Engine), units.FormatSize(n.Capacity), units.FormatSize(n.Used),
					units.FormatSize(n.Capacity-n.Used), jobs, nodeState(n))
			}
			return w.Flush()
		}),
	}
	addJSON(cmd, g)
	return cmd
}

func gcCmd(g *globals) *cobra.Command {
	var discard int64
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove RAMDISKs (and their mounts) that no job holds (root)",
		Long: `gc removes RAMDISKs that no job holds: leftovers of an earlier run.
One whose job has no record at all (the state directory was lost, or
restored from a backup older than the RAMDISK) is removed only if it
holds nothing; one that holds data is quarantined: listed here, by rsa
health and by the metric rsa_quarantined_ramdisks, its job id kept from
new jobs, and never removed by RSA. Save what it holds (as its owner:
see docs/operations.md), then remove it with --discard ID.`,
		Args: cobra.NoArgs,
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, _ []string) error {
			rep, err := c.GC(cmd.Context(), api.GCRequest{Discard: discard})
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(os.Stdout, rep)
			}
			if len(rep.Removed) == 0 {
				fmt.Println("nothing to remove")
			}
			for _, r := range rep.Removed {
				fmt.Println("removed", textsafe.Line(r))
			}
			for _, q := range rep.Quarantined {
				fmt.Println("quarantined", quarantinedLine(q))
			}
			return nil
		}),
	}
	cmd.Flags().Int64Var(&discard, "discard", 0, "remove the quarantined RAMDISK of this job id, data and all (after saving what it holds)")
	addJSON(cmd, g)
	return cmd
}

// quarantinedLine describes a quarantined RAMDISK on one line.
func quarantinedLine(q api.QuarantinedView) string {
	held := "what it holds cannot be read"
	if q.Used >= 0 {
		held = units.FormatSize(q.Used)
		if q.Files >= 0 {
			held += fmt.Sprintf(" in %d files and directories", q.Files)
		}
	}
	return fmt.Sprintf("%s (job %d): %s, no job record knows of it; save it, then rsa gc --discard %d", textsafe.Line(q.Dir), q.Job, held, q.Job)
}
