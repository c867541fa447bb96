package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The benchmarks' homes: by default each part (a target, the benchmark's
// daemon, its emulated cluster, the sweep's images) makes a directory of
// its own under one of these, and removes it when it is done with it.
const (
	StateHome = "/var/tmp/rsa-bench" // on disk: images, the daemon's state
	RunHome   = "/run/rsa-bench"     // in RAM: mount points
)

// Tidy removes the homes that nothing is left in: the last part out
// cannot know it is the last. A home something is still in (a target left
// up) stays, and so does anything that is not an empty directory.
func Tidy() error {
	var errs []error
	for _, d := range []string{StateHome, RunHome} {
		if err := RemoveIfEmpty(d); err != nil {
			errs = append(errs, fmt.Errorf("removing the benchmarks' empty home: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RemoveIfEmpty removes dir if it is an empty directory; one that is not
// there, or holds something, is no error and stays as it is.
func RemoveIfEmpty(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}
