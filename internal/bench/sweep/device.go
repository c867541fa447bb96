package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Device is a block device Setup made for the sweep.
type Device struct {
	Name    string // RAMDevice or DiskDevice
	Path    string // /dev/loopN
	Backing string // the file under the loop device
	Dir     string // the directory Setup made for Backing (ram-dev: a tmpfs mount)
	Size    int64
	// LogicalBlockSize is the device's smallest O_DIRECT request
	// (BLKSSZGET): block sizes below it are skipped.
	LogicalBlockSize int
	DirectIO         bool // the loop device does direct I/O to Backing
}

// Setup makes the devices c names, each c.Size bytes, and returns them
// with the function that removes them again: it detaches the loop
// devices, unmounts the tmpfs and removes the files and directories it
// made, and nothing else. Call it also when Run fails; it needs no
// context, so it still works once ctx is cancelled. On error Setup has
// already removed what it made.
func Setup(ctx context.Context, c Config) (devs []Device, cleanup func() error, err error) {
	c = c.withDefaults()
	if os.Geteuid() != 0 {
		return nil, nil, errors.New("sweep: making loop devices and mounting a tmpfs needs root: run as root")
	}
	var undo teardown
	defer func() {
		if err != nil {
			err = errors.Join(err, undo.run())
		}
	}()
	for _, name := range c.Devices {
		var d Device
		switch name {
		case RAMDevice:
			d, err = setupRAM(ctx, c, &undo)
		case DiskDevice:
			d, err = setupDisk(ctx, c, &undo)
		default:
			err = fmt.Errorf("device %q: use %s or %s", name, RAMDevice, DiskDevice)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sweep: set up %s: %w", name, err)
		}
		devs = append(devs, d)
	}
	return devs, undo.run, nil
}

// setupRAM makes ram-dev: a loop device over a file that fills a tmpfs of
// its own, in a new directory under c.RunDir.
func setupRAM(ctx context.Context, c Config, undo *teardown) (Device, error) {
	dir, err := makeDir(c.RunDir, RAMDevice, undo)
	if err != nil {
		return Device{}, err
	}
	// The file takes the whole tmpfs but for a little room for the
	// tmpfs' own use.
	if err := mountTmpfs(dir, c.Size+(4<<20)); err != nil {
		return Device{}, err
	}
	undo.push(func() error { return unmount(dir) })
	return attachImage(ctx, RAMDevice, dir, c.Size, false, undo)
}

// setupDisk makes disk-dev: a loop device with direct I/O over a file on
// the ext4 disk, in a new directory under c.DiskDir.
func setupDisk(ctx context.Context, c Config, undo *teardown) (Device, error) {
	if err := mkdirAll(c.DiskDir, undo); err != nil {
		return Device{}, err
	}
	if err := checkOnDisk(c.DiskDir); err != nil {
		return Device{}, err
	}
	dir, err := makeDir(c.DiskDir, DiskDevice, undo)
	if err != nil {
		return Device{}, err
	}
	return attachImage(ctx, DiskDevice, dir, c.Size, true, undo)
}

// attachImage writes a size-byte file in dir and attaches a loop device
// to it.
func attachImage(ctx context.Context, name, dir string, size int64, directIO bool, undo *teardown) (Device, error) {
	image := filepath.Join(dir, "image")
	undo.push(func() error { return removeIfExists(image) })
	if err := preallocate(ctx, image, size); err != nil {
		return Device{}, fmt.Errorf("preallocate %s: %w", image, err)
	}
	// Detach by the image rather than by the device the attach printed:
	// it finds the loop device also when the attach was interrupted
	// after the kernel made it, and never one this sweep did not make.
	undo.push(func() error { return detachImage(image) })
	dev, err := attachLoop(ctx, image, directIO)
	if err != nil {
		return Device{}, err
	}
	d := Device{Name: name, Path: dev, Backing: image, Dir: dir}
	if d.DirectIO, err = loopDirectIO(dev); err != nil {
		return Device{}, err
	}
	if directIO && !d.DirectIO {
		return Device{}, fmt.Errorf("%s over %s does not do direct I/O: the page cache would sit between the sweep and the disk", dev, image)
	}
	if d.LogicalBlockSize, d.Size, err = blockGeometry(dev); err != nil {
		return Device{}, err
	}
	if d.Size != size {
		return Device{}, fmt.Errorf("%s has %d bytes, not the %d asked", dev, d.Size, size)
	}
	return d, nil
}

// makeDir makes a directory of its own under parent, so that sweeps run
// at once do not meet, and has undo remove it.
func makeDir(parent, name string, undo *teardown) (string, error) {
	if err := mkdirAll(parent, undo); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		return "", err
	}
	undo.push(func() error { return removeIfExists(dir) })
	return dir, nil
}

// mkdirAll makes dir and the parents it lacks, and has undo remove those
// it made once they are empty again (one that is not is left as it is).
func mkdirAll(dir string, undo *teardown) error {
	var made []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Outermost pushed first: the teardown runs backwards, innermost first.
	for _, d := range slices.Backward(made) {
		undo.push(func() error { return bench.RemoveIfEmpty(d) })
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// teardown is the undo of a Setup: what it made, removed in the reverse
// order. Every step runs even when one fails.
type teardown struct {
	steps []func() error
	done  bool
}

func (t *teardown) push(step func() error) { t.steps = append(t.steps, step) }

func (t *teardown) run() error {
	if t.done {
		return nil
	}
	t.done = true
	var errs []error
	for _, step := range slices.Backward(t.steps) {
		if err := step(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sweep: clean up: %w", err)
	}
	return nil
}
