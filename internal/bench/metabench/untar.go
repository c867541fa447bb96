package metabench

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Extract unpacks the tar archive r into dir, as tar xf does, and returns
// the number of files it wrote (regular files and hard links). A user may
// give any archive, so it is unpacked safely: names that are absolute or
// hold a ".." are refused, no entry is written through a symbolic link
// (symlinks are made, never followed), and an entry whose name already
// exists is refused rather than replaced.
func Extract(ctx context.Context, r io.Reader, dir string) (files int, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	x := extractor{root: root, dirs: map[string]bool{".": true}, buf: make([]byte, copyBuffer)}
	defer x.leave()
	// Buffered, as tar reads its archive in records: unbuffered, every
	// entry cost a read for its header, one for its body and lseeks past
	// its padding (archive/tar seeks where it can).
	tr := tar.NewReader(bufio.NewReaderSize(r, archiveBuffer))
	for {
		if err := ctx.Err(); err != nil {
			return files, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return files, fmt.Errorf("untar into %s: %w", dir, err)
		}
		n, err := x.entry(hdr, tr)
		files += n
		if err != nil {
			return files, fmt.Errorf("untar %q into %s: %w", hdr.Name, dir, err)
		}
	}
}

const (
	archiveBuffer = 1 << 20   // read of the archive at a time
	copyBuffer    = 128 << 10 // a file's body written at a time
)

// extractor unpacks entries under root. dirs holds the directories known
// to be real directories (made or checked), so that a deep tree costs one
// Lstat a directory, not one a file.
type extractor struct {
	root *os.Root
	dirs map[string]bool
	// dir is the directory the last file went into, held open: a file is
	// then created, and its time set, by its name in it, as tar does by
	// its path. Through root every call opens each directory of the path
	// in turn (how os.Root stays beneath it), which on a FUSE mount is a
	// round trip each: by name in the held directory, Untar keeps up with
	// tar -xf (docs/performance.md, "Measurements behind choices in the
	// code").
	dir     *os.File
	dirName string
	buf     []byte // bodies are copied through it, not a new one a file
}

// enter returns the descriptor of dir, a directory mkdirs made or
// checked, held open.
func (x *extractor) enter(dir string) (int, error) {
	if x.dir != nil && x.dirName == dir {
		return int(x.dir.Fd()), nil
	}
	x.leave()
	d, err := x.root.Open(dir)
	if err != nil {
		return -1, err
	}
	x.dir, x.dirName = d, dir
	return int(d.Fd()), nil
}

func (x *extractor) leave() {
	if x.dir != nil {
		x.dir.Close()
		x.dir = nil
	}
}

// entry unpacks one entry and returns how many files it wrote (0 or 1).
func (x *extractor) entry(hdr *tar.Header, data io.Reader) (int, error) {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return 0, nil // metadata for the archive, not an entry
	}
	name, err := entryName(hdr.Name)
	if err != nil {
		return 0, err
	}
	if name == "." {
		return 0, nil // the archive's "./": dir itself
	}
	if err := x.mkdirs(path.Dir(name)); err != nil {
		return 0, err
	}
	perm := hdr.FileInfo().Mode().Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return 0, x.mkdirs(name)
	case tar.TypeReg:
		return 1, x.writeFile(name, perm, data, hdr.ModTime)
	case tar.TypeSymlink:
		return 0, x.root.Symlink(hdr.Linkname, name)
	case tar.TypeLink:
		target, err := entryName(hdr.Linkname)
		if err != nil {
			return 0, fmt.Errorf("hard link to %q: %w", hdr.Linkname, err)
		}
		if err := x.mkdirs(path.Dir(target)); err != nil {
			return 0, err
		}
		if fi, err := x.root.Lstat(target); err != nil {
			return 0, err
		} else if !fi.Mode().IsRegular() {
			return 0, fmt.Errorf("hard link to %s, which is not a regular file", target)
		}
		return 1, x.root.Link(target, name)
	}
	return 0, fmt.Errorf("entry type %q is not unpacked: only directories, files and links are", hdr.Typeflag)
}

// writeFile writes a regular file and then sets its modification time:
// tar xf restores it, and that is metadata work the source's Untar timed.
// The file is made by its name in its held directory, with O_EXCL and
// O_NOFOLLOW (no link is followed, nothing that exists is replaced), on
// a bare descriptor: an *os.File costs a poller registration a file, and
// its ReadFrom a new copy buffer a file.
func (x *extractor) writeFile(name string, perm fs.FileMode, data io.Reader, mtime time.Time) error {
	dfd, err := x.enter(path.Dir(name))
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dfd, path.Base(name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return &fs.PathError{Op: "create", Path: name, Err: err}
	}
	_, err = io.CopyBuffer(fdWriter(fd), data, x.buf)
	if err == nil {
		ts := unix.NsecToTimespec(mtime.UnixNano())
		if e := unix.UtimesNanoAt(fd, "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH); e != nil {
			err = &fs.PathError{Op: "set times of", Path: name, Err: e}
		}
	}
	if e := unix.Close(fd); err == nil && e != nil {
		err = &fs.PathError{Op: "close", Path: name, Err: e}
	}
	return err
}

// mkdirs makes dir and its parents under the root, refusing to pass
// through anything that is not a real directory, a symlink above all.
func (x *extractor) mkdirs(dir string) error {
	if x.dirs[dir] {
		return nil
	}
	if parent := path.Dir(dir); parent != dir {
		if err := x.mkdirs(parent); err != nil {
			return err
		}
	}
	fi, err := x.root.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := x.root.Mkdir(dir, 0o755); err != nil {
			return err
		}
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: entries are not written through links", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	x.dirs[dir] = true
	return nil
}

// entryName checks an archive's name and returns it clean and relative.
func entryName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		return "", errors.New("absolute name: entries must stay in the directory")
	case strings.Contains(name, "\x00"):
		return "", errors.New("name holds a NUL")
	}
	for elem := range strings.SplitSeq(name, "/") {
		if elem == ".." {
			return "", errors.New(`name holds "..": entries must stay in the directory`)
		}
	}
	return path.Clean(name), nil
}
