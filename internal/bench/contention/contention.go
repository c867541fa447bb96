// Package contention emulates, at a GlusterFS brick, what creating files
// in one directory from many client nodes costs on GPFS: the thesis'
// mechanism behind its slow many-writer stage-out, which a plain brick
// directory does not have.
//
// On GPFS a create in a directory needs the directory's token; with many
// nodes creating in one directory the token moves between them, and each
// move costs a revoke. The lab's GlusterFS volume serves its brick, a plain
// directory, from a glusterfsd process; an LD_PRELOAD shim (shim/contention.c,
// built by Build) loaded into glusterfsd puts the cost back. glusterd starts
// the brick processes and they inherit its environment, so glusterd is
// started with LD_PRELOAD set to the shim and EnvConf naming the
// configuration file that Model.Write writes.
//
// The model: creates of new files in one directory are serialised, one at
// a time per directory in arrival order. n is the number of creates in
// flight for the directory when a create arrives (itself, the one served
// and those waiting); once granted the directory, it sleeps
// Model.Cost(n) = Local + Revoke·(1 − 1/n) before the real open and
// releases the directory when the open returns. n is counted at arrival,
// not at the grant: at the grant the client whose create was just served
// has not sent its next one yet, and two hosts taking turns would count
// as one host alone. With n clients contending, the directory's token
// was last held by another client with probability 1 − 1/n, and moving it
// costs Revoke. A Linux client's VFS holds a directory's i_rwsem
// exclusively for an O_CREAT open, so each client host has at most one
// create in flight per directory: n at the brick counts contending client
// hosts, and a single-process stage-out has n = 1 and pays Local a file.
//
// What the shim delays: open, open64, openat and openat64 with O_CREAT of
// a file that does not exist yet, under Model.Root and not under a
// .glusterfs component (the brick's own metadata). Everything else passes
// straight through: opens of existing files, mknod (a FUSE client that
// sends MKNOD rather than CREATE is not delayed), other processes' files.
// The serialisation is per process: a brick is one multi-threaded
// glusterfsd, so its creates meet in one queue, but creates from separate
// processes under the same configuration do not wait for each other.
// Concurrency at the brick is bounded by glusterfsd's I/O threads
// (performance.io-thread-count): n cannot exceed it.
//
// The shim counts what it did in a stats file beside the configuration
// (ReadStats), summed over every process that loads it with the same
// configuration; a new Model.Generation starts the counts from zero. It
// writes conf.stats, conf.stats.tmp and conf.stats.lock, so the
// configuration's directory must be writable by the brick process.
package contention

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// EnvConf is the environment variable that names the shim's configuration
// file, the conf argument of Model.Write, Disable and ReadStats.
const EnvConf = "RSA_CONTENTION_CONF"

// The thesis' calibration, from Table 5.2 (GPFS, 1,024 client nodes).
// One sequential writer paid ≈ 0.084 s a file: the rsync stage-out of
// 2,048 files of 1 MiB took 224 s against 52 s for one 2 GiB file, and
// (224 − 52)/2048 ≈ 0.084 s; so ThesisLocal ≈ 0.08 s, the cost at n = 1.
// The 2,048-way storm from 1,024 client nodes paid ≈ 0.52 s a file:
// (1109.86 s − ~41 s of data)/2048. So ThesisRevoke = 0.44 s, since
// 0.08 + 0.44·(1 − 1/1024) ≈ 0.52 s.
const (
	ThesisLocal  = 80 * time.Millisecond
	ThesisRevoke = 440 * time.Millisecond
)

//go:embed shim/contention.c
var source string

// Build writes the shim's source into dir (which must exist) and compiles
// it there with cc into contention.so, returning that file's absolute path.
// A failed compilation's error names cc and carries its output.
func Build(ctx context.Context, dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("contention: build in %s: %w", dir, err)
	}
	src, lib := filepath.Join(dir, "contention.c"), filepath.Join(dir, "contention.so")
	if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
		return "", fmt.Errorf("contention: build: %w", err)
	}
	args := []string{"-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", lib, src, "-ldl", "-lpthread"}
	out, err := exec.CommandContext(ctx, "cc", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("contention: cc %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return lib, nil
}

// Model is the shim's configuration: creates under Root cost
// Cost(n) = Local + Revoke·(1 − 1/n). The shim works in whole microseconds,
// so Write truncates Local and Revoke to them. Generation labels the
// counts: a Generation the shim has not seen zeroes them.
type Model struct {
	Root          string        // an absolute directory: the brick, or a directory in it
	Local, Revoke time.Duration // the cost of a create at n = 1, and of moving the token
	Generation    int64
}

// Cost is what a create costs with n creates in flight in its directory:
// Local + Revoke·(1 − 1/n). An n below 1 counts as 1.
func (m Model) Cost(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	return m.Local + m.Revoke*time.Duration(n-1)/time.Duration(n)
}

// Write writes m as the shim's configuration file conf, atomically (a
// temporary file beside it, renamed), mode 0644; a shim that loads it
// acts from its next create on. It refuses a Root that is not absolute
// and negative durations.
func (m Model) Write(conf string) error {
	switch {
	case !filepath.IsAbs(m.Root) || strings.ContainsAny(m.Root, "\n\x00"):
		return fmt.Errorf("contention: model root %q is not an absolute path", m.Root)
	case m.Local < 0 || m.Revoke < 0:
		return fmt.Errorf("contention: model durations must not be negative (local %v, revoke %v)", m.Local, m.Revoke)
	}
	text := fmt.Sprintf("root=%s\nlocal_us=%d\nrevoke_us=%d\ngeneration=%d\n",
		filepath.Clean(m.Root), m.Local.Microseconds(), m.Revoke.Microseconds(), m.Generation)
	f, err := os.CreateTemp(filepath.Dir(conf), filepath.Base(conf)+".tmp*")
	if err != nil {
		return fmt.Errorf("contention: write %s: %w", conf, err)
	}
	_, err = f.WriteString(text)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), conf)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("contention: write %s: %w", conf, err)
	}
	return nil
}

// Disable turns the shim off by removing its configuration file conf; an
// absent file is already off. The stats file stays.
func Disable(conf string) error {
	if err := os.Remove(conf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("contention: disable: %w", err)
	}
	return nil
}

// Stats is what the shim counted in one generation.
type Stats struct {
	Generation int64
	Creates    int64         // creates delayed
	Overflow   int64         // creates passed through: the shim's directory table was full
	Delay      time.Duration // the sleeps, summed over the creates
	Inflight   map[int]int64 // creates by n, the creates in flight in the directory when each arrived (n ≥ 64 as 64)
}

// ReadStats reads the stats file the shim keeps beside conf (conf + ".stats").
// No file yet, nothing counted: zero Stats and a nil error. Its Generation
// is the one counted; a caller that changed the Model's checks it.
func ReadStats(conf string) (Stats, error) {
	var s Stats
	path := conf + ".stats"
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("contention: stats: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		key, val, ok := strings.Cut(line, "=")
		v, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil {
			return Stats{}, fmt.Errorf("contention: stats %s: bad line %q", path, line)
		}
		switch key {
		case "generation":
			s.Generation = v
		case "creates":
			s.Creates = v
		case "delay_us":
			s.Delay = time.Duration(v) * time.Microsecond
		case "overflow":
			s.Overflow = v
		default:
			n, err := strconv.Atoi(strings.TrimPrefix(key, "inflight_"))
			if !strings.HasPrefix(key, "inflight_") || err != nil || n < 1 {
				return Stats{}, fmt.Errorf("contention: stats %s: unknown key %q", path, key)
			}
			if s.Inflight == nil {
				s.Inflight = map[int]int64{}
			}
			s.Inflight[n] = v
		}
	}
	return s, nil
}

// MeanInflight is the mean n over the counted creates, 0 with none.
func (s Stats) MeanInflight() float64 {
	var sum, count int64
	for n, c := range s.Inflight {
		sum += int64(n) * c
		count += c
	}
	if count == 0 {
		return 0
	}
	return float64(sum) / float64(count)
}
