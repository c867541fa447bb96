package metabench

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
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
	x := extractor{root: root, dirs: map[string]bool{".": true}}
	tr := tar.NewReader(r)
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

// extractor unpacks entries under root. dirs holds the directories known
// to be real directories (made or checked), so that a deep tree costs one
// Lstat a directory, not one a file.
type extractor struct {
	root *os.Root
	dirs map[string]bool
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
		if err := x.writeFile(name, perm, data); err != nil {
			return 0, err
		}
		// tar xf restores each file's modification time; so do we, as
		// that is metadata work the source's Untar timed.
		return 1, x.root.Chtimes(name, hdr.ModTime, hdr.ModTime)
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

func (x *extractor) writeFile(name string, perm fs.FileMode, data io.Reader) (err error) {
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(f, data)
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
