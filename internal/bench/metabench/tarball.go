package metabench

import (
	"archive/tar"
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// tarTime is every entry's modification time, fixed so that the archive's
// bytes depend on the seed alone (glibc 2.3 came out in October 2002).
func tarTime() time.Time { return time.Date(2002, time.October, 2, 0, 0, 0, 0, time.UTC) }

// WriteTar writes the tree as a tar archive: each directory, then its
// files, then its subdirectories, as tar itself walks a tree. File data is
// pseudo-random from the seed, so that no layer below can compress or
// deduplicate it away.
func (t Tree) WriteTar(w io.Writer) error {
	if err := t.Validate(); err != nil {
		return err
	}
	dirs := t.layout()
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], t.Seed)
	data := rand.NewChaCha8(key)
	tw := tar.NewWriter(w)

	var walk func(i int) error
	walk = func(i int) error {
		d := dirs[i]
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeDir, Name: d.path + "/", Mode: 0o755,
			ModTime: tarTime(), Format: tar.FormatUSTAR,
		}); err != nil {
			return fmt.Errorf("tar %s: %w", d.path, err)
		}
		for _, f := range d.files {
			name := d.path + "/" + f.name
			if err := tw.WriteHeader(&tar.Header{
				Typeflag: tar.TypeReg, Name: name, Size: f.size, Mode: 0o644,
				ModTime: tarTime(), Format: tar.FormatUSTAR,
			}); err != nil {
				return fmt.Errorf("tar %s: %w", name, err)
			}
			if _, err := io.CopyN(tw, data, f.size); err != nil {
				return fmt.Errorf("tar %s: %w", name, err)
			}
		}
		for _, sub := range d.subdirs {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(0); err != nil {
		return err
	}
	return tw.Close()
}

// writeTarFile writes the tree's archive to path, replacing what is there.
func (t Tree) writeTarFile(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := t.WriteTar(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return bw.Flush()
}

// copyFile copies src to dst, which must not exist.
func copyFile(dst, src string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Clean(dst), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
