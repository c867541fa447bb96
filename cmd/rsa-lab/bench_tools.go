package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/tools"
	"github.com/rsa-hpc/rsa/internal/units"
)

// jobFiles are the job files of rsa-lab bench tools, built in so that the
// binary runs them wherever it is (make evidence, the tests); --jobs
// reads a directory instead.
//
//go:embed jobs
var jobFiles embed.FS

// builtinJobs is the directory of the built-in job files.
func builtinJobs() fs.FS {
	sub, err := fs.Sub(jobFiles, "jobs")
	if err != nil {
		panic(err) // the directory is embedded: it is there
	}
	return sub
}

const toolsLong = `rsa-lab bench tools runs IOR, mdtest and fio jobs on a target and sets each
result beside the number a seed gives for the same measurement, where the
two are defined alike. The jobs stand in for GUPFS' MPTIO (IOR, and fio for
its random tests), METABENCH (mdtest) and the TMS device sweep (fio); each
says which seed test it stands for, and where its definition differs (the
rows' notes). The job files are built in (cmd/rsa-lab/jobs, whose README has
their grammar); --jobs DIR reads a directory of the same files instead.

IOR and mdtest are those scripts/build-ior.sh builds (make build-ior; --ior
is the prefix it prints), run under its Open MPI; fio is the system's.
The target comes up with as many client mounts as the jobs use (shared@1g:
a rank a mount for mdtest's directory-a-rank jobs, a second client for the
stat of another client's files), and is left up.

  rsa-lab bench tools --target ram --ior "$(scripts/build-ior.sh | tail -n1)"
  rsa-lab bench tools --tool mdtest --target shared@1g --profile full --ior PREFIX`

// benchToolsCmd is rsa-lab bench tools: the seeds' measurements made by
// IOR, mdtest and fio.
func benchToolsCmd() *cobra.Command {
	var (
		f       benchFlags
		ior     string
		jobsDir string
		names   []string
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Run IOR, mdtest and fio jobs on a target, beside the numbers of the seed tests they stand for",
		Long:  toolsLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fsys := builtinJobs()
			if jobsDir != "" {
				fsys = os.DirFS(jobsDir)
			}
			set, err := tools.Load(fsys)
			if err != nil {
				return err
			}
			var which []tools.Tool
			for _, n := range names {
				t := tools.Tool(n)
				if !slices.Contains(tools.Tools, t) {
					return fmt.Errorf("--tool %q: use %s", n, toolNames())
				}
				which = append(which, t)
			}
			jobs, err := set.Select(f.profile, which)
			if err != nil {
				return err
			}
			if len(jobs) == 0 {
				return fmt.Errorf("no %s job runs in profile %s", strings.Join(names, " or "), f.profile)
			}
			// Before the target comes up: without the prefix every IOR
			// and mdtest job would fail the same way.
			if ior == "" && slices.ContainsFunc(jobs, func(j tools.Job) bool { return j.Tool != tools.Fio }) {
				return errors.New("--ior PREFIX is needed for IOR's and mdtest's jobs: make build-ior (scripts/build-ior.sh) prints it; --tool fio runs without")
			}
			env := tools.Env{IOR: ior, Profile: f.profile, Log: cmd.ErrOrStderr()}
			if env.Target, env.Mounts, err = toolsTarget(cmd, &f, tools.Mounts(jobs)); err != nil {
				return err
			}
			rows, runErr := tools.Run(cmd.Context(), set, jobs, env)
			// The rows of the jobs that ran go out even when one failed;
			// the command then fails with its error.
			var emitErr error
			if len(rows) > 0 {
				emitErr = f.emit(cmd.OutOrStdout(), rows)
			}
			return errors.Join(runErr, emitErr)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&ior, "ior", "", "IOR's prefix, as scripts/build-ior.sh prints it (holds bin/ior and bin/mdtest)")
	cmd.Flags().StringVar(&jobsDir, "jobs", "", "a directory of job files (ior.jobs, mdtest.jobs, fio.jobs and fio's job files) instead of the built-in ones")
	cmd.Flags().StringSliceVar(&names, "tool", toolNameList(), "the tools whose jobs run: "+toolNames())
	return cmd
}

// toolsTarget brings the target up with mounts client mounts (where it
// has clients) and returns its name and mounts. A path is used as it is.
func toolsTarget(cmd *cobra.Command, f *benchFlags, mounts int) (string, []string, error) {
	if strings.HasPrefix(f.target, "/") {
		return f.target, []string{f.target}, nil
	}
	size, err := units.ParseSize(f.size)
	if err != nil {
		return "", nil, fmt.Errorf("--target-size: %w", err)
	}
	t, err := target.Up(cmd.Context(), target.Config{Size: size, Clients: mounts}, f.target)
	if err != nil {
		return "", nil, err
	}
	if len(t.Dirs) > 0 {
		return t.Name, t.Dirs, nil
	}
	return t.Name, []string{t.Dir}, nil
}

func toolNameList() []string {
	names := make([]string, len(tools.Tools))
	for i, t := range tools.Tools {
		names[i] = string(t)
	}
	return names
}

func toolNames() string { return strings.Join(toolNameList(), ", ") }
