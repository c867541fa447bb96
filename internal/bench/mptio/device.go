package mptio

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/sys/unix"
)

// CheckDevices checks, for a -R plan, what only the devices can tell: each
// is a block device, not in use when the run writes, large enough for the
// layout, and -b and -s are multiples of its logical block size
// (BLKSSZGET), which MPTIO requires of raw and block I/O.
func CheckDevices(p *Plan) error {
	c := &p.Config
	if c.Mode != Device {
		return nil
	}
	writes := slices.ContainsFunc(Tests(), func(t Test) bool { return t.writes() && c.Runs(t) })
	var errs []error
	for i, dev := range p.Files {
		if err := checkDevice(dev, p.Extents[i], c.RecordSize, c.Offset, writes); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkDevice(dev string, extent, recsz, offset int64, writes bool) error {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if writes {
		// O_EXCL on a block device is an exclusive open: the kernel
		// refuses it (EBUSY) while the device is mounted, which keeps a
		// mistyped -R from overwriting a live file system.
		flags |= unix.O_EXCL
	}
	fd, err := unix.Open(dev, flags, 0)
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("-R %s is in use (mounted, or held by another program) and the run would overwrite it: unmount it or name another device", dev)
	}
	if err != nil {
		return fmt.Errorf("-R %s: %w", dev, err)
	}
	defer unix.Close(fd)

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("-R %s: %w", dev, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return fmt.Errorf("-R %s is not a block device: name a device such as /dev/loop0, or use -G, -P or -T for files", dev)
	}
	lbs, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
	if err != nil {
		return fmt.Errorf("-R %s: logical block size (BLKSSZGET): %w", dev, err)
	}
	var errs []error
	if recsz%int64(lbs) != 0 {
		errs = append(errs, fmt.Errorf("-b %d is not a multiple of the logical block size of %s (%d bytes): use -b %d",
			recsz, dev, lbs, roundUp(recsz, int64(lbs))))
	}
	if offset%int64(lbs) != 0 {
		errs = append(errs, fmt.Errorf("-s %d is not a multiple of the logical block size of %s (%d bytes): use -s %d",
			offset, dev, lbs, roundUp(offset, int64(lbs))))
	}
	size, err := unix.Seek(fd, 0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("-R %s: size: %w", dev, err)
	}
	if extent > size {
		errs = append(errs, fmt.Errorf("-R %s holds %d bytes but the layout reaches byte %d: lower -f/-F or -s", dev, size, extent))
	}
	return errors.Join(errs...)
}
