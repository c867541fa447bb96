// Command rsa is the RAMDISK Storage Accelerator: `rsa serve` is the daemon
// (root); the job and admin commands and the Slurm hooks are thin clients
// of its socket. The tools beside them run on their own: `rsa agent` on
// RSA and compute nodes, `rsa ca` and the mover `rsa copy`. The simulator
// and the benchmarks are not linked in: they are the lab's binary,
// rsa-lab (cmd/rsa-lab).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/all"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/munge"
	"github.com/rsa-hpc/rsa/internal/slurm"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/version"
)

// exitCode carries a process exit status (rsa run returns its command's).
type exitCode int

func (e exitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

type globals struct {
	config string
	socket string
	server string
	json   bool
}

// The main thread runs the main goroutine alone. The stage runner forks a
// stage from a thread it first moves into the stage's cgroup v1
// directories and marks no_new_privs, and ends that thread by letting its
// goroutine exit locked to it; the main thread cannot end (Go parks it
// instead), so it would stay in the stage's cgroup, which then can never
// be removed, and keep the flag.
func init() { runtime.LockOSThread() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRoot(&globals{}).ExecuteContext(ctx)
	stop()
	var code exitCode
	switch {
	case err == nil:
	case errors.As(err, &code):
		os.Exit(int(code))
	default:
		// Errors carry the daemon's messages, and through them users'.
		fmt.Fprintln(os.Stderr, "rsa:", textsafe.Text(err.Error()))
		os.Exit(1)
	}
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "rsa",
		Short: "RAMDISK Storage Accelerator: per-job RAM file systems with asynchronous staging",
		Long: `RSA gives a batch job its own RAM file system, sized to the job. Before the job
starts, RSA stages its input into RAM; while it runs, the RAM appears at the
job's own input path, later at its output path; after it ends, RSA stages the
output back to persistent storage and frees the RAM, while the compute nodes
already run the next job.

Start the daemon as root with 'rsa serve'; users run jobs with 'rsa run'.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "config file (default $RSA_CONFIG or "+config.DefaultPath+")")
	root.PersistentFlags().StringVar(&g.socket, "socket", "", "daemon socket (default $RSA_SOCKET or the config's socket)")
	root.PersistentFlags().StringVar(&g.server, "server", "", "from a login node: the daemon's remote access HOST:PORT (a failover pair's two, comma-separated), reached with a MUNGE credential (default $RSA_SERVER; munged's socket: $RSA_MUNGE_SOCKET)")
	root.AddCommand(nodeCmd(), slurmBBCmd(g), slurmNodeCmd(g, "prolog"), slurmNodeCmd(g, "epilog"), serveCmd(g), runCmd(g), submitCmd(g), statusCmd(g), waitCmd(g), cancelCmd(g), logCmd(g),
		nodesCmd(g), versionCmd(g), healthCmd(g), retryCmd(g), discardCmd(g),
		gcCmd(g), copyCmd(), drainCmd(g, true), drainCmd(g, false), settleCmd(g), genDocsCmd(), configCmd(g))
	root.AddCommand(caCmd())
	root.AddCommand(agentCmd())
	return root
}

// client connects to the daemon named by --socket, RSA_SOCKET or the config.
func (g *globals) client() (*api.Client, error) {
	if srv := cmp.Or(g.server, os.Getenv("RSA_SERVER")); srv != "" && g.socket == "" {
		return api.NewRemoteClient(srv, munge.Munge{Socket: os.Getenv("RSA_MUNGE_SOCKET")}), nil
	}
	s, err := g.socketPath()
	if err != nil {
		return nil, err
	}
	return api.NewClient(s), nil
}

// loadConfig reads the config file flag names (config.Resolve), with
// every engine's keys.
func loadConfig(flag string) (*config.Config, error) {
	path, explicit := config.Resolve(flag)
	return config.Load(path, explicit, all.Engines())
}

// socketPath is the daemon's socket: --socket, $RSA_SOCKET or the config's.
func (g *globals) socketPath() (string, error) {
	if g.socket != "" {
		return g.socket, nil
	}
	if s := os.Getenv("RSA_SOCKET"); s != "" {
		return s, nil
	}
	cfg, err := loadConfig(g.config)
	if err != nil {
		return "", err
	}
	return cfg.Socket, nil
}

// clientRun adapts fn to a cobra RunE that first connects to the daemon.
func (g *globals) clientRun(fn func(cmd *cobra.Command, c *api.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		return fn(cmd, c, args)
	}
}

func addJSON(cmd *cobra.Command, g *globals) {
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON instead of text")
}

// printJSON prints v as indented JSON, safe on a terminal
// (textsafe.WriteJSON).
func printJSON(w io.Writer, v any) error { return textsafe.WriteJSON(w, v) }

func jobArg(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%q is not a job id: give an RSA job id, or slurm:ID for a Slurm job's (see rsa status)", s)
	}
	return id, nil
}

// jobRef reads a JOB argument: an RSA job id, or slurm:ID for the RSA job
// of Slurm job ID (its newest: a requeued Slurm job gets a new RSA job).
// Only jobs whose Slurm id the caller may see are found: their own, or
// any for root.
func jobRef(ctx context.Context, c *api.Client, s string) (int64, error) {
	sid, ok := strings.CutPrefix(s, "slurm:")
	if !ok {
		return jobArg(s)
	}
	if err := slurm.CheckID(sid); err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	js, err := c.Jobs(ctx, true)
	if err != nil {
		return 0, err
	}
	var id int64
	for _, j := range js {
		if j.Spec.SchedulerID == sid && j.ID > id {
			id = j.ID
		}
	}
	if id == 0 {
		return 0, fmt.Errorf("no RSA job of Slurm job %s that you may see (rsa status --all lists them)", sid)
	}
	return id, nil
}

func serveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the RSA daemon (root)",
		Long: `Run the RSA daemon in the foreground. It owns all state (SQLite in state_dir),
builds and destroys RAMDISKs, stages data as each job's user and mounts RAM
at jobs' paths. After a crash or kill it resumes every job where it stood.
Without a config file it serves one local RSA node with half of the free RAM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			if g.socket != "" {
				cfg.Socket = g.socket
			}
			var level slog.Level
			level.UnmarshalText([]byte(cfg.LogLevel))
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("locating the rsa binary for staging: %w", err)
			}
			open := func(cfg *config.Config, policy mount.Policy, epoch int64) (engine.Engine, access.Access, error) {
				return all.Open(cfg, all.Options{Log: log, Self: self, Policy: policy, Epoch: epoch})
			}
			return daemon.Serve(cmd.Context(), cfg, daemon.Options{Log: log, Version: version.String(), Self: self, OpenEngine: open})
		},
	}
}

func versionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client's and the daemon's versions; exit 1 if the daemon does not answer",
		Long: `Print the client's and the daemon's versions. The exit status is 1 when the
daemon does not answer (a health check for monitoring and systemd).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := map[string]any{"client": version.String()}
			if c, err := g.client(); err != nil {
				out["daemon_error"] = err.Error()
			} else if v, err := c.Version(cmd.Context()); err != nil {
				out["daemon_error"] = err.Error()
			} else {
				out["daemon"] = v
			}
			_, down := out["daemon_error"]
			if g.json {
				if err := printJSON(os.Stdout, out); err != nil {
					return err
				}
			} else {
				fmt.Printf("rsa client %s\n", version.String())
				if v, ok := out["daemon"].(api.VersionInfo); ok {
					fmt.Printf("rsa daemon %s (schema %d, config %s)\n", textsafe.Line(v.Version), v.Schema, textsafe.Line(v.Config))
					if v.Epoch > 0 {
						fmt.Printf("active rsa serve of the failover pair: %s (lease epoch %d)\n", textsafe.Line(v.Host), v.Epoch)
					}
				} else {
					fmt.Printf("rsa daemon: %s\n", textsafe.Line(fmt.Sprint(out["daemon_error"])))
				}
			}
			if down {
				return exitCode(1)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}
