package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Markers are empty files, one for each Slurm job that has an RSA job not
// yet done, named by the Slurm job id, in one directory
// (config.Config.MarkersDir: beside the daemon's socket, or in a failover
// pair beside the shared state directory). The Slurm prolog and epilog run for every job and must not hold
// up a job that does not use RSA while rsa serve is down: they look here
// first, and only a job with a marker waits out a daemon restart.
//
// A marker is written before its job is stored and removed after the job
// is done, so a job that has one may have none of RSA's (after a crash
// between the two), never the other way round: a stale marker costs a wait,
// a missing one would cost a job its RAMDISK. The daemon puts the directory
// right at start (Sync).
type Markers struct{ Dir string }

// name is the marker's file name for a Slurm job id: a plain job id (an
// array task has one of its own), nothing else.
func name(slurmID string) (string, error) {
	n, err := strconv.ParseUint(slurmID, 10, 32)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != slurmID {
		return "", fmt.Errorf("%q is not a Slurm job id", slurmID)
	}
	return slurmID, nil
}

// Set marks a Slurm job as one of RSA's. It is idempotent.
func (m Markers) Set(slurmID string) error {
	n, err := name(slurmID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return fmt.Errorf("marking Slurm job %s: %w", n, err)
	}
	f, err := os.OpenFile(filepath.Join(m.Dir, n), os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("marking Slurm job %s: %w", n, err)
	}
	return f.Close()
}

// Clear removes a Slurm job's marker. It is idempotent.
func (m Markers) Clear(slurmID string) error {
	n, err := name(slurmID)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(m.Dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unmarking Slurm job %s: %w", n, err)
	}
	return nil
}

// Has reports whether a Slurm job is marked. When the directory cannot be
// read it says yes: waiting too long is the safe mistake.
func (m Markers) Has(slurmID string) bool {
	n, err := name(slurmID)
	if err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(m.Dir, n)); errors.Is(err, fs.ErrNotExist) {
		// Markers are kept only by a daemon that has started once; with
		// no directory there is nothing to go by.
		_, derr := os.Stat(m.Dir)
		return derr != nil && !errors.Is(derr, fs.ErrNotExist)
	}
	return true
}

// Sync makes the markers exactly the Slurm jobs in live.
func (m Markers) Sync(live []string) error {
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return fmt.Errorf("marker directory: %w", err)
	}
	// The directory may exist from an older run with other modes.
	if err := os.Chmod(m.Dir, 0o755); err != nil {
		return fmt.Errorf("marker directory: %w", err)
	}
	want := map[string]bool{}
	for _, id := range live {
		if n, err := name(id); err == nil {
			want[n] = true
		}
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return fmt.Errorf("marker directory: %w", err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			if err := os.RemoveAll(filepath.Join(m.Dir, e.Name())); err != nil {
				return fmt.Errorf("removing a stale marker: %w", err)
			}
		}
		delete(want, e.Name())
	}
	for n := range want {
		if err := m.Set(n); err != nil {
			return err
		}
	}
	return nil
}
