package sweep

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// The devices Setup can make.
const (
	RAMDevice  = "ram-dev"  // loop device over a file in a tmpfs
	DiskDevice = "disk-dev" // loop device with direct I/O over a file on ext4
)

// DeviceNames are the devices Setup can make, in the order they are swept.
func DeviceNames() []string { return []string{RAMDevice, DiskDevice} }

// Config is one sweep: the grid, the devices it runs on and how long a
// point may take.
type Config struct {
	QDs        []int         // requests in flight: TMS's AIX queue_depth
	BlockSizes []int64       // bytes of each request: TMS's dd buffer
	Size       int64         // bytes of each device, and of each point's write and read
	Runtime    time.Duration // cap of each point's write, and of its read
	Devices    []string      // RAMDevice, DiskDevice, or both
	Fio        bool          // cross-check every point with fio

	RunDir  string // where ram-dev's tmpfs is mounted (default /run/rsa-bench/sweep)
	DiskDir string // the ext4 directory of disk-dev's file (default /var/tmp/rsa-bench/sweep)

	// OnPoint, if set, is called after each point is measured, to show
	// progress: a full sweep takes most of an hour.
	OnPoint func(Point)
}

// Full is the source's sweep: 1 GiB, queue depth 1 to 16 and buffers of
// 1 KiB to 32 MiB, doubling, each point capped at 5 s.
func Full() Config {
	return Config{
		QDs:        []int{1, 2, 4, 8, 16},
		BlockSizes: doubling(1<<10, 32<<20),
		Size:       1 << 30,
		Runtime:    5 * time.Second,
		Devices:    DeviceNames(),
		Fio:        true,
	}
}

// Quick is a corner of the full sweep that runs in under a minute with
// fio: the chart depths 1, 4 and 16, four buffer sizes a factor of 16
// apart, on 256 MiB devices. The cap is 0.5 s a point rather than 5 s:
// the small-buffer points on the disk are the only ones that reach it, and
// half a second of them is thousands of requests.
func Quick() Config {
	return Config{
		QDs:        []int{1, 4, 16},
		BlockSizes: []int64{4 << 10, 64 << 10, 1 << 20, 16 << 20},
		Size:       256 << 20,
		Runtime:    500 * time.Millisecond,
		Devices:    DeviceNames(),
		Fio:        true,
	}
}

func doubling(from, to int64) []int64 {
	var s []int64
	for n := from; n <= to; n *= 2 {
		s = append(s, n)
	}
	return s
}

func (c Config) withDefaults() Config {
	if c.RunDir == "" {
		c.RunDir = filepath.Join(bench.RunHome, "sweep")
	}
	if c.DiskDir == "" {
		c.DiskDir = filepath.Join(bench.StateHome, "sweep")
	}
	return c
}

// maxQD bounds the goroutines of a point, and fio's iodepth with them.
const maxQD = 1024

// Validate reports every value of c that cannot be swept, each with what
// to write instead.
func (c Config) Validate() error {
	var errs []error
	if len(c.QDs) == 0 {
		errs = append(errs, errors.New("no queue depths: give at least one, e.g. --qd 1,4,16"))
	}
	for _, qd := range c.QDs {
		if qd < 1 || qd > maxQD {
			errs = append(errs, fmt.Errorf("queue depth %d: use 1 to %d", qd, maxQD))
		}
	}
	if len(c.BlockSizes) == 0 {
		errs = append(errs, errors.New("no block sizes: give at least one, e.g. --bs 4K,64K,1M"))
	}
	for _, bs := range c.BlockSizes {
		if bs < 512 || bs > 1<<30 {
			errs = append(errs, fmt.Errorf("block size %d: use 512 bytes to 1G", bs))
		}
	}
	if c.Size < 1<<20 {
		errs = append(errs, fmt.Errorf("size %d: use at least 1M (e.g. --size 256M)", c.Size))
	}
	if c.Runtime <= 0 {
		errs = append(errs, fmt.Errorf("runtime %v: use a positive duration, e.g. --runtime 5s", c.Runtime))
	}
	if len(c.Devices) == 0 {
		errs = append(errs, fmt.Errorf("no devices: use --device %s", strings.Join(DeviceNames(), ",")))
	}
	for _, d := range c.Devices {
		if !slices.Contains(DeviceNames(), d) {
			errs = append(errs, fmt.Errorf("device %q: use %s", d, strings.Join(DeviceNames(), " or ")))
		}
	}
	return errors.Join(errs...)
}
