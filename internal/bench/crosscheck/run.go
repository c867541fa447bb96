package crosscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotBuilt reports that ior, mdtest or mpirun is not where RunIOR or
// RunMdtest looked.
var ErrNotBuilt = errors.New("IOR/mdtest not built: run scripts/build-ior.sh and pass the prefix it prints")

// stopGrace is how long mpirun has, once the context is done, to take its
// ranks down after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// RunIOR runs prefix/bin/ior with args on ranks MPI ranks and parses its
// summary. It adds -O summaryFormat=JSON and -O summaryFile= after args
// (IOR takes the last of each), because IOR's warnings land in the middle
// of JSON on standard output. When rank 0 runs on another host (a hostfile
// in Open MPI's environment) and so leaves no file here, it parses
// standard output instead.
func RunIOR(ctx context.Context, prefix string, ranks int, args ...string) (*IORResult, error) {
	bin, err := tool(prefix, "ior")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rsa-ior-")
	if err != nil {
		return nil, fmt.Errorf("crosscheck: %w", err)
	}
	defer os.RemoveAll(dir)
	summary := filepath.Join(dir, "summary.json")
	// A full slice expression, so that append copies rather than writes
	// into the caller's array.
	args = append(args[:len(args):len(args)], "-O", "summaryFormat=JSON")
	// IOR splits -O on commas: a path with one would be cut short.
	if !strings.Contains(summary, ",") {
		args = append(args, "-O", "summaryFile="+summary)
	}
	stdout, err := mpirun(ctx, bin, ranks, args)
	if err != nil {
		return nil, err
	}
	out, err := os.ReadFile(summary)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(out) == 0:
		out = stdout
	case err != nil:
		return nil, fmt.Errorf("crosscheck: IOR's summary: %w", err)
	}
	return ParseIOR(out)
}

// RunMdtest runs prefix/bin/mdtest with args on ranks MPI ranks and
// parses its SUMMARY tables.
func RunMdtest(ctx context.Context, prefix string, ranks int, args ...string) (*MdtestResult, error) {
	bin, err := tool(prefix, "mdtest")
	if err != nil {
		return nil, err
	}
	stdout, err := mpirun(ctx, bin, ranks, args)
	if err != nil {
		return nil, err
	}
	return ParseMdtest(stdout)
}

// tool returns the path of program name in prefix, made by build-ior.sh.
func tool(prefix, name string) (string, error) {
	if prefix == "" {
		return "", fmt.Errorf("crosscheck: no IOR prefix given: %w", ErrNotBuilt)
	}
	bin := filepath.Join(prefix, "bin", name)
	fi, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("crosscheck: %w: %w", err, ErrNotBuilt)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("crosscheck: %s is not an executable: %w", bin, ErrNotBuilt)
	}
	return bin, nil
}

// mpirun runs bin with args under Open MPI's mpirun (the one
// build-ior.sh installs, that ior was built against) and returns its
// standard output.
func mpirun(ctx context.Context, bin string, ranks int, args []string) ([]byte, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("crosscheck: %d ranks, want 1 or more", ranks)
	}
	launcher, err := exec.LookPath("mpirun")
	if err != nil {
		return nil, fmt.Errorf("crosscheck: %w: %w", err, ErrNotBuilt)
	}
	// --oversubscribe: rsa-lab bench may ask for more ranks than the host has
	// cores, which Open MPI otherwise refuses. Open MPI also refuses root
	// unless told, and rsa-lab bench runs as root to bring targets up.
	argv := []string{"--oversubscribe", "-np", strconv.Itoa(ranks)}
	if os.Geteuid() == 0 {
		argv = append(argv, "--allow-run-as-root")
	}
	argv = append(argv, bin)
	argv = append(argv, args...)

	cmd := exec.CommandContext(ctx, launcher, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// mpirun in a process group of its own, and SIGTERM rather than the
	// default SIGKILL on cancel: a killed mpirun leaves its ranks running,
	// while a terminated one takes them down. The group is signalled too,
	// for ranks that outlive a stuck mpirun.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("crosscheck: %s stopped: %w", filepath.Base(bin), ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("crosscheck: mpirun %s: %w%s", filepath.Base(bin), err, why(stdout.Bytes(), stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// why picks from what a failed run printed the lines that say why, for
// its error: IOR and mdtest print their ERROR lines last on standard
// output, while on standard error their own complaint comes first and
// Open MPI's notes on the abort follow it.
func why(stdout, stderr []byte) string {
	const keep = 6
	var b strings.Builder
	add := func(lines []string) {
		for _, l := range lines {
			b.WriteString("\n\t")
			b.WriteString(l)
		}
	}
	if out := lines(stdout); len(out) > keep {
		add(out[len(out)-keep:])
	} else {
		add(out)
	}
	if errs := lines(stderr); len(errs) > keep {
		add(errs[:keep])
	} else {
		add(errs)
	}
	return b.String()
}

func lines(out []byte) []string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
