package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/slurm"
	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// Hooks that wait for RSA's work: Slurm 22.05 blocks in data_in and
// data_out until they return, and pre_run, teardown and the prolog must not
// return before the job's RAMDISK is in place or gone.
var blockingHooks = map[string]bool{
	"data_in": true, "data_out": true, "pre_run": true, "teardown": true, "prolog": true, "epilog": true,
}

// scriptArg is the position of the job script's path in each hook's
// arguments, for the hooks whose job script the daemon reads.
var scriptArg = map[string]int{"job_process": 0, "setup": 4}

func slurmBBCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "slurm-bb [--] HOOK [ARG...]",
		Short: "answer a Slurm burst_buffer/lua hook (called by contrib/slurm/burst_buffer.lua)",
		Long: `slurm-bb is what contrib/slurm/burst_buffer.lua runs for each hook. It asks
the rsa daemon, and prints the verdict on its first line (SUCCESS, ERROR or
BUSY) and Slurm's message after it. It always exits 0 unless it cannot run.

Flags end at HOOK or at "--": the arguments come from Slurm and its users
('scontrol show bbstat ARGS') and are never read as flags.`,
		Args:          cobra.MinimumNArgs(1),
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := api.HookRequest{Hook: args[0], Args: args[1:]}
			rep, err := hook(cmd.Context(), g, r)
			if err == nil && r.Hook == "paths" {
				err = writePaths(arg(r.Args, 3), rep.Env)
				if errors.Is(err, fs.ErrNotExist) {
					// Slurm 25.11 names a path file in a directory an
					// array task does not have. The RAMDISK is mounted
					// all the same; only the RSA_* variables are missing,
					// which must not cost the job its start.
					rep.Message, err = "RSA: the job's RSA_* variables are not set: "+err.Error(), nil
				}
			}
			if err != nil {
				rep = &api.HookReply{Verdict: api.Failure, Message: "rsa: " + err.Error()}
			}
			// Slurm shows the message to whoever asks: scontrol, squeue.
			fmt.Fprintln(cmd.OutOrStdout(), textsafe.Line(rep.Verdict))
			if rep.Message != "" {
				fmt.Fprintln(cmd.OutOrStdout(), textsafe.Text(rep.Message))
			}
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// slurmNodeCmd is `rsa slurm-prolog` or `rsa slurm-epilog`. Neither ever
// fails the job: without RSA it reads and writes on disk, as the thesis'
// prolog intends.
func slurmNodeCmd(g *globals, name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "slurm-" + name + " [--]",
		Short: "tell the rsa daemon a Slurm job " + map[string]string{"prolog": "started", "epilog": "ended"}[name] + " (PrologSlurmctld/EpilogSlurmctld)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id := os.Getenv("SLURM_JOB_ID")
			if id == "" {
				return errors.New("SLURM_JOB_ID is not set: run from Slurm's PrologSlurmctld/EpilogSlurmctld")
			}
			rep, err := hook(cmd.Context(), g, api.HookRequest{Hook: name, Args: []string{id, os.Getenv("SLURM_JOB_UID"), os.Getenv("SLURM_JOB_GID"), os.Getenv("SLURM_JOB_NODELIST")}})
			switch {
			case err != nil:
				fmt.Fprintf(os.Stderr, "rsa %s for job %s: %s (the job goes on without RSA)\n", name, textsafe.Line(id), textsafe.Line(err.Error()))
			case rep.Message != "":
				fmt.Fprintf(os.Stderr, "rsa %s for job %s: %s\n", name, textsafe.Line(id), textsafe.Line(rep.Message))
			}
			return nil
		},
	}
	// Like slurm-bb: nothing after the first argument is a flag.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// hook calls the daemon, reading the job script where the hook needs it,
// and for blocking hooks asks again while the answer is BUSY. A daemon
// that does not answer is waited for (downGrace): a restart of rsa serve
// must not fail jobs.
func hook(ctx context.Context, g *globals, r api.HookRequest) (*api.HookReply, error) {
	if i, ok := scriptArg[r.Hook]; ok {
		path := arg(r.Args, i)
		b, err := readScript(path)
		if errors.Is(err, fs.ErrNotExist) && r.Hook == "setup" {
			// An array task's script is its array job's (Slurm 25.11
			// names the task's own path, which does not exist).
			if alt, ok := arrayScript(path, arg(r.Args, 5)); ok {
				b, err = readScript(alt)
			}
		}
		if err != nil {
			return nil, err
		}
		r.Script = b
	}
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	if blockingHooks[r.Hook] {
		r.Wait = 30 * time.Second
	}
	// Decided when the daemon first fails to answer, and only then: the
	// prolog's decision may read the job's script from Slurm.
	var grace *downGrace
	for {
		var rep *api.HookReply
		call := func() (err error) {
			rep, err = c.Hook(ctx, r)
			return err
		}
		err := call()
		if err != nil && api.Unreachable(err) {
			if grace == nil {
				// Deciding counts against the grace it decides.
				began := time.Now()
				grace = graceOf(ctx, g, r)
				grace.wait -= time.Since(began)
			}
			err = waitOutDaemon(ctx, grace.wait, nil, call)
			if err != nil && api.Unreachable(err) {
				grace.gaveUp(ctx, r)
			}
		}
		if err != nil && api.Unreachable(err) {
			if rep, ok := withoutDaemon[r.Hook]; ok {
				// Inside slurmctld, which cannot wait: the job goes on,
				// and the message says what was skipped.
				return &api.HookReply{Verdict: api.Success, Message: rep + " (" + err.Error() + ")"}, nil
			}
		}
		if err != nil {
			return nil, err
		}
		if rep.Verdict != api.Busy || !blockingHooks[r.Hook] {
			return rep, nil
		}
	}
}

// downGrace is how long a hook waits out a daemon that does not answer,
// and, for the prolog of one of RSA's jobs, how to tell the job's user
// when it gives up.
type downGrace struct {
	wait time.Duration
	// slurmc and note, when set: the job is RSA's and note, set as its
	// Slurm comment, says why it runs without RSA.
	slurmc slurm.Client
	note   string
}

// graceOf decides how long hook r waits out a daemon that does not
// answer. The prolog and the epilog run for every Slurm job: they wait
// (slurm.prolog_grace) only for RSA's own jobs, known by the markers the
// daemon keeps beside its socket, or, for the prolog, by the job itself:
// a script with #RSA lines is one the daemon takes on when the job starts,
// whether or not its poller has met the job yet.
func graceOf(ctx context.Context, g *globals, r api.HookRequest) *downGrace {
	if r.Hook != "prolog" && r.Hook != "epilog" {
		return &downGrace{wait: graceFor(r.Hook, 0)}
	}
	cfg, err := loadConfig(g.config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rsa %s: %s; slurm.prolog_grace taken as its default, %s\n", r.Hook, textsafe.Line(err.Error()), config.DefaultPrologGrace)
		cfg = &config.Config{Slurm: config.Slurm{PrologGrace: config.DefaultPrologGrace}}
	}
	wait := graceFor(r.Hook, cfg.Slurm.PrologGrace)
	if wait <= 0 {
		return &downGrace{}
	}
	id := arg(r.Args, 0)
	slurmc := slurm.Client{Bin: cfg.Slurm.Bin}
	sock, err := g.socketPath()
	if err == nil {
		cfg.Socket = sock
	}
	marked := err == nil && slurm.Markers{Dir: cfg.MarkersDir()}.Has(id)
	switch {
	case r.Hook == "epilog" && marked:
		return &downGrace{wait: wait}
	case r.Hook == "prolog" && (marked || asksRSA(ctx, slurmc, id, wait)):
		return &downGrace{wait: wait, slurmc: slurmc,
			note: fmt.Sprintf("RSA: rsa serve did not answer within slurm.prolog_grace (%s) when the job started: it runs without RSA, on disk", wait)}
	}
	return &downGrace{}
}

// gaveUp tells the user of an RSA job that its prolog let it go on
// without RSA. Best effort: the prolog never fails a job.
func (d *downGrace) gaveUp(ctx context.Context, r api.HookRequest) {
	if d.note == "" {
		return
	}
	if err := d.slurmc.Comment(ctx, arg(r.Args, 0), d.note); err != nil {
		fmt.Fprintf(os.Stderr, "rsa %s: setting the job's comment: %s\n", r.Hook, textsafe.Line(err.Error()))
	}
}

// asksRSA reports whether Slurm job id's script has #RSA lines RSA takes,
// read as the daemon reads it (scontrol write batch_script), within wait.
// A script that cannot be read makes no job of RSA's: the prolog holds up
// no job on a guess.
func asksRSA(ctx context.Context, slurmc slurm.Client, id string, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	script, err := slurmc.Script(ctx, id)
	if err != nil {
		return false
	}
	_, ok, err := slurm.Parse(script)
	return ok && err == nil
}

// withoutDaemon is what the hooks that run inside slurmctld, under its
// locks, answer while the daemon is down (restarting): they must not wait,
// and failing them would refuse a submission or hold a starting job. Each
// is done again later: setup reads the #RSA lines again and refuses a bad
// one; pre_run mounts the RAMDISK (only the RSA_* variables are missing).
var withoutDaemon = map[string]string{
	"job_process": "RSA: the rsa daemon did not answer; the job's #RSA lines are checked when its RAMDISK is set up",
	"paths":       "RSA: the rsa daemon did not answer; the job's RSA_* variables are not set (its RAMDISK is mounted all the same)",
}

// graceFor is how long a hook waits out a daemon that is down (a restart).
// The hooks inside slurmctld (job_process, paths, pools) and bbstat's
// get_status never wait: slurmctld holds its locks, a user waits at the
// terminal. A job that is about to run or has run must not wait long:
// without RSA it uses the disk; the prolog and the epilog wait prolog
// (slurm.prolog_grace). Staging hooks wait as long as any client (the job
// is pending); the other hooks of slurmscriptd (setup, post_run,
// test_data_in, ...) a while within burst_buffer.conf's OtherTimeout: a
// failed one holds the job.
func graceFor(hook string, prolog time.Duration) time.Duration {
	switch hook {
	case "job_process", "paths", "pools", "get_status":
		return 0
	case "prolog", "epilog":
		return prolog
	}
	if blockingHooks[hook] {
		return daemonGrace
	}
	return 2 * time.Minute
}

// scriptPath is where slurmctld keeps a job's script in its state
// directory: STATE/hash.N/job.ID/script, N the id's last digit.
var scriptPath = regexp.MustCompile(`^(/.+)/hash\.[0-9]/job\.[0-9]+/script$`)

// arrayScript is the script of array job arrayJob in the state directory
// of path, a task's script path; ok is false when either does not fit.
func arrayScript(path, arrayJob string) (string, bool) {
	m := scriptPath.FindStringSubmatch(path)
	id, err := strconv.ParseUint(arrayJob, 10, 32)
	if m == nil || err != nil || id == 0 {
		return "", false
	}
	return fmt.Sprintf("%s/hash.%d/job.%d/script", m[1], id%10, id), true
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func readScript(path string) (string, error) {
	if path == "" {
		return "", errors.New("no job script path given")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the job script: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	return string(b), err
}

func writePaths(path string, env []string) error {
	if len(env) == 0 {
		return nil
	}
	if path == "" {
		return errors.New("paths: no path_file given")
	}
	// Checked again here, at the point of writing: one RSA_* variable a
	// line, nothing that could end a line or start another variable.
	if err := api.CheckEnv(env); err != nil {
		return fmt.Errorf("paths: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.WriteString(strings.Join(env, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
