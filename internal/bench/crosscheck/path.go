package crosscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NoAt returns a path to dir that IOR and mdtest take whole, and a func
// that removes what it made. Both tools split their path arguments (IOR's
// -o, mdtest's -d) on '@', one path a rank, so a directory whose path
// holds one, as shared@1g's mount point does, is reached through a
// symbolic link, made by the caller (root) in a directory of its own
// that no one else can write. A path without '@' is returned as it is.
func NoAt(dir string) (string, func(), error) {
	noop := func() {}
	if !strings.Contains(dir, "@") {
		return dir, noop, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", noop, fmt.Errorf("crosscheck: %w", err)
	}
	links, err := os.MkdirTemp("", "rsa-noat-")
	if err != nil {
		return "", noop, fmt.Errorf("crosscheck: %w", err)
	}
	if strings.Contains(links, "@") {
		os.Remove(links)
		return "", noop, fmt.Errorf("crosscheck: the temporary directory %s holds an '@', which IOR and mdtest split paths on: set TMPDIR", links)
	}
	link := filepath.Join(links, "dir")
	if err := os.Symlink(abs, link); err != nil {
		os.RemoveAll(links)
		return "", noop, fmt.Errorf("crosscheck: %w", err)
	}
	return link, func() { os.RemoveAll(links) }, nil
}
