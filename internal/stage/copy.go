// Package stage moves a job's data between persistent storage and its
// RAMDISK. The copier here runs inside a child process that already has the
// job's uid, gid and groups (see Runner), so it never touches user paths with
// root's rights. It owns copy and verify semantics; it must not know about
// jobs, states or mounts.
package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stats counts what a copy did.
type Stats struct {
	Files   int64 `json:"files"`
	Dirs    int64 `json:"dirs"`
	Links   int64 `json:"symlinks"`
	Bytes   int64 `json:"bytes"`
	Skipped int64 `json:"skipped"` // already identical (resumed copy)
}

// Progress is reported while copying.
type Progress struct {
	Files, Bytes           int64
	TotalFiles, TotalBytes int64
}

// Copier copies a tree like `cp -a SRC/. DST/`: contents, directories,
// symlinks as symlinks, permission bits and modification times. DST's own
// root directory is left as it is.
type Copier struct {
	// Progress, if set, is called now and then from the copying goroutine.
	Progress func(Progress)
	// Warn reports entries that are skipped on purpose (sockets, devices).
	Warn func(path, why string)
}

// Measure counts the regular files and bytes under root.
func Measure(root string) (files, bytes int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes, err
}

// Copy copies src's contents into dst, which must exist.
func (c *Copier) Copy(ctx context.Context, src, dst string) (Stats, error) {
	var st Stats
	var prog Progress
	prog.TotalFiles, prog.TotalBytes, _ = Measure(src)
	last := time.Now()
	report := func(force bool) {
		if c.Progress != nil && (force || time.Since(last) > 250*time.Millisecond) {
			prog.Files, prog.Bytes = st.Files, st.Bytes
			c.Progress(prog)
			last = time.Now()
		}
	}
	type dirTime struct {
		path string
		mt   time.Time
	}
	var dirs []dirTime
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("creating %s: %w", target, err)
			}
			if err := os.Chmod(target, mode.Perm()); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{target, info.ModTime()})
			st.Dirs++
		case mode.IsRegular():
			same, err := sameFile(info, target)
			if err != nil {
				return err
			}
			if same {
				st.Skipped++
			} else if err := copyFile(p, target, info); err != nil {
				return err
			}
			st.Files++
			st.Bytes += info.Size()
			report(false)
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("reading link %s: %w", p, err)
			}
			if old, err := os.Readlink(target); err == nil && old == link {
				st.Links++
				return nil
			}
			os.Remove(target)
			if err := os.Symlink(link, target); err != nil {
				return fmt.Errorf("creating link %s: %w", target, err)
			}
			ts := []unix.Timespec{unix.NsecToTimespec(info.ModTime().UnixNano()), unix.NsecToTimespec(info.ModTime().UnixNano())}
			_ = unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
			st.Links++
		case mode&fs.ModeNamedPipe != 0:
			if err := unix.Mkfifo(target, uint32(mode.Perm())); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("creating fifo %s: %w", target, err)
			}
		default:
			if c.Warn != nil {
				c.Warn(p, "skipped: sockets and device files are not copied")
			}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Directory times last, innermost first, after their contents changed.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].mt, dirs[i].mt); err != nil {
			return st, err
		}
	}
	report(true)
	return st, nil
}

// sameFile reports whether target already has info's size and mtime, so a
// resumed copy can skip it.
func sameFile(info fs.FileInfo, target string) (bool, error) {
	t, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return t.Mode().IsRegular() && t.Size() == info.Size() && t.ModTime().Equal(info.ModTime()) && t.Mode().Perm() == info.Mode().Perm(), nil
}

// copyFile writes to a temporary name and renames it into place, so a
// partial file never looks complete.
func copyFile(src, dst string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	defer in.Close()
	tmp := filepath.Join(filepath.Dir(dst), ".rsa-tmp."+filepath.Base(dst))
	if len(filepath.Base(tmp)) > 255 {
		tmp = filepath.Join(filepath.Dir(dst), fmt.Sprintf(".rsa-tmp.%d", time.Now().UnixNano()))
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	_, err = io.Copy(out, in) // copy_file_range where the kernel allows
	if err == nil {
		err = out.Chmod(info.Mode().Perm())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, info.ModTime(), info.ModTime())
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return nil
}

// Verify re-reads every file, link and directory under src and checks that
// dst holds the same. Extra entries in dst are allowed (an output directory
// may hold earlier results).
func Verify(ctx context.Context, src, dst string) error {
	bufA := make([]byte, 1<<20)
	bufB := make([]byte, 1<<20)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		ti, err := os.Lstat(target)
		if err != nil {
			return fmt.Errorf("verify: %s missing: %w", target, err)
		}
		switch {
		case d.IsDir():
			if !ti.IsDir() {
				return fmt.Errorf("verify: %s is not a directory", target)
			}
		case d.Type()&fs.ModeSymlink != 0:
			a, _ := os.Readlink(p)
			b, err := os.Readlink(target)
			if err != nil || a != b {
				return fmt.Errorf("verify: link %s differs", target)
			}
		case d.Type().IsRegular():
			if err := sameContent(p, target, bufA, bufB); err != nil {
				return err
			}
		}
		return nil
	})
}

func sameContent(a, b string, bufA, bufB []byte) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	for {
		na, ea := io.ReadFull(fa, bufA)
		nb, eb := io.ReadFull(fb, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return fmt.Errorf("verify: %s differs from %s", b, a)
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			if eb != ea {
				return fmt.Errorf("verify: %s differs in length from %s", b, a)
			}
			return nil
		}
		if ea != nil {
			return ea
		}
		if eb != nil {
			return eb
		}
	}
}
