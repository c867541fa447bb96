package stage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/erofs"
	"github.com/rsa-hpc/rsa/internal/units"
)

// ImageName is the input image's name in the root of a RAMDISK built for
// one (Task.Image).
const ImageName = "input.erofs"

// ImageLimits bound an input image beyond the RAMDISK's free space. The
// builder holds about 200 bytes of metadata per entry, in the daemon or
// agent that builds it, until the image is written.
type ImageLimits struct {
	MaxEntries int // 0: DefaultImageEntries
	MaxDepth   int // 0: DefaultImageDepth
}

// Bounds of an input image when the config sets none: 5 million entries is
// about 1 GiB of the builder's memory.
const (
	DefaultImageEntries = 5_000_000
	DefaultImageDepth   = 1024
)

// ImageStats is what an image build reports.
type ImageStats struct {
	Entries int64
	Bytes   int64 // the image file's size
	Took    time.Duration
}

// image is one input image being built: the root-owned file in the
// RAMDISK's root and the pipe the user's pack writes into.
type image struct {
	file   *os.File
	r, w   *os.File // the pipe: the child writes w, the builder reads r
	limits erofs.Limits
	done   chan imageResult
}

type imageResult struct {
	st  erofs.Stats
	err error
}

// openImage creates the image file in ramdisk, which must be root's
// alone: no user may write the bytes the kernel will parse as root, nor
// swap the file under its name. The directory is reached without
// following symlinks, and a file of that name already there (an earlier,
// interrupted build) is replaced.
func openImage(ramdisk string, lim ImageLimits) (*image, error) {
	dfd, err := unix.Openat2(unix.AT_FDCWD, ramdisk, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the RAMDISK %s for the input image: %w", ramdisk, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, fmt.Errorf("reading the RAMDISK %s: %w", ramdisk, err)
	}
	if st.Uid != 0 || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("the RAMDISK %s of an input image must be root's alone (it is uid %d, mode %04o): its engine builds it so for an image", ramdisk, st.Uid, st.Mode&0o7777)
	}
	var free unix.Statfs_t
	if err := unix.Fstatfs(dfd, &free); err != nil {
		return nil, fmt.Errorf("reading the RAMDISK's free space: %w", err)
	}
	if err := unix.Unlinkat(dfd, ImageName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("removing an earlier input image: %w", err)
	}
	fd, err := unix.Openat(dfd, ImageName, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o400)
	if err != nil {
		return nil, fmt.Errorf("creating the input image: %w", err)
	}
	img := &image{file: os.NewFile(uintptr(fd), ramdisk+"/"+ImageName), done: make(chan imageResult, 1)}
	img.limits = erofs.Limits{
		MaxImageBytes: int64(free.Bavail) * free.Bsize,
		MaxEntries:    cmp.Or(lim.MaxEntries, DefaultImageEntries),
		MaxDepth:      cmp.Or(lim.MaxDepth, DefaultImageDepth),
	}
	if img.r, img.w, err = os.Pipe(); err != nil {
		img.file.Close()
		return nil, err
	}
	return img, nil
}

// build reads the tar stream until its end and writes the image; it runs
// while the child packs. On an error it closes the pipe, so the child's
// next write fails and the stage ends.
func (img *image) build(ctx context.Context) {
	st, err := erofs.FromTar(ctx, img.r, img.file, img.limits)
	if err != nil {
		img.r.Close()
	} else {
		// Whatever follows the tar's end is not the image's: read to
		// the end so the child's last writes do not fail.
		_, _ = io.Copy(io.Discard, img.r)
	}
	img.done <- imageResult{st, err}
}

// finish waits for the builder once the child has ended (childErr its
// error) and returns the stage's outcome: the image checked and flushed,
// or why there is none (and then no image file).
func (img *image) finish(phase Phase, childErr error, log io.Writer) (ImageStats, error) {
	res := <-img.done
	img.r.Close()
	fail := func(err error) (ImageStats, error) {
		_ = img.file.Truncate(0)
		name := img.file.Name()
		img.file.Close()
		os.Remove(name)
		return ImageStats{}, err
	}
	switch {
	case res.err != nil && !errors.Is(res.err, erofs.ErrTruncated):
		// The builder refused the stream (a limit, an entry it does not
		// take): the child's broken pipe is a consequence.
		return fail(fmt.Errorf("%s: building the input image: %w%s", phase, res.err, imageHint(res.err)))
	case childErr != nil:
		return fail(childErr)
	case res.err != nil:
		return fail(fmt.Errorf("%s: building the input image: %w", phase, res.err))
	}
	if err := img.file.Sync(); err != nil {
		return fail(fmt.Errorf("%s: flushing the input image: %w", phase, err))
	}
	fi, err := img.file.Stat()
	if err != nil {
		return fail(err)
	}
	// The writer's own output, read back as a mount will read it.
	if err := erofs.Check(img.file, fi.Size()); err != nil {
		return fail(fmt.Errorf("%s: the input image just built does not check: %w", phase, err))
	}
	if err := img.file.Close(); err != nil {
		return fail(err)
	}
	st := ImageStats{Entries: int64(res.st.Entries), Bytes: fi.Size(), Took: res.st.Duration}
	fmt.Fprintf(log, "%s %s: input image of %d entries, %s, built in %s\n", time.Now().Format(time.RFC3339), phase,
		st.Entries, units.FormatSize(st.Bytes), st.Took.Round(time.Millisecond))
	return st, nil
}

// imageHint says what to do about a stream the builder refused.
func imageHint(err error) string {
	switch {
	case errors.Is(err, erofs.ErrLimit):
		return " (the input does not fit its RAMDISK as an image: ask for more capacity, or stage it as files with input=files)"
	case errors.Is(err, erofs.ErrInvalidEntry):
		return " (an entry an image cannot hold: stage this input as files with input=files)"
	}
	return ""
}
