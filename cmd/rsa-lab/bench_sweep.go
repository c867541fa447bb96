package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench/sweep"
	"github.com/rsa-hpc/rsa/internal/units"
)

// sweepFlags are rsa-lab bench sweep's flags. Empty grid flags take the
// profile's values.
type sweepFlags struct {
	bench   benchFlags // --profile, --json; --target as another name of --device
	qd, bs  string
	size    string
	runtime string
	devices string
	noFio   bool
}

func benchSweepCmd() *cobra.Command {
	var f sweepFlags
	quick, full := sweep.Quick(), sweep.Full()
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "TMS raw I/O sweep: queue depth x block size on a RAM and a disk block device (root)",
		Long: `TMS (the Texas Memory RAM-SAN report) wrote 1 GB to raw devices with dd and
read it back, for queue depths 1 to 16 and buffers of 1 KB to 32 MB: the
RAM-SAN was at its best at queue depth 1 with small buffers, the disks only
with deep queues and big buffers.

rsa-lab bench sweep makes its own devices and removes them at the end:
  ram-dev   a loop device over a file in a tmpfs it mounts
  disk-dev  a loop device with direct I/O over a file on ext4
            (under /var/tmp/rsa-bench/sweep)
For each block size and queue depth it writes the device with O_DIRECT,
QD requests in flight (QD threads, each taking the next block), until the
size is done or the runtime cap passes, then reads it back the same way.
The data is random, so incompressible. fio (libaio, iodepth QD, O_DIRECT)
runs every point again as the cross-check, unless --no-fio.

It prints a bs x qd table of MiB/s per device and direction, then the rows,
with TMS's numbers beside the points it gives them for.

--profile quick (default): qd ` + joinInts(quick.QDs) + `, bs ` + joinSizes(quick.BlockSizes) + `, ` + sweep.SizeLabel(quick.Size) + ` devices,
  a ` + quick.Runtime.String() + ` cap a point: under a minute.
--profile full: qd ` + joinInts(full.QDs) + `, bs 1K..32M (16 sizes), ` + sweep.SizeLabel(full.Size) + ` devices, a ` + full.Runtime.String() + ` cap:
  up to an hour.

  rsa-lab bench sweep
  rsa-lab bench sweep --profile full --device disk-dev
  rsa-lab bench sweep --qd 1,8 --bs 4K..16M --size 512M --runtime 2s --no-fio`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.bench.profile, "profile", "quick", "quick (under a minute) or full (the source's grid)")
	fl.BoolVar(&f.bench.json, "json", false, "print JSON lines (one result a line) instead of a table; the grids go to standard error")
	fl.StringVar(&f.qd, "qd", "", "queue depths, e.g. 1,2,4,8,16 (default: the profile's)")
	fl.StringVar(&f.bs, "bs", "", "block sizes, e.g. 4K,64K,1M or 1K..32M for the doublings (default: the profile's)")
	fl.StringVar(&f.size, "size", "", "bytes of each device, written and read at each point, e.g. 1G (default: the profile's)")
	fl.StringVar(&f.runtime, "runtime", "", "cap of each point's write and of its read, e.g. 5s (default: the profile's)")
	fl.StringVar(&f.devices, "device", strings.Join(sweep.DeviceNames(), ","), "devices to make and sweep: "+strings.Join(sweep.DeviceNames(), ", "))
	fl.StringVar(&f.bench.target, "target", "", "another name of --device; the sweep takes no directory")
	fl.BoolVar(&f.noFio, "no-fio", false, "skip the fio cross-check (rows then carry no check)")
	return cmd
}

func runSweep(cmd *cobra.Command, f *sweepFlags) (err error) {
	c, err := f.config(cmd)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Fio {
		if _, err := exec.LookPath("fio"); err != nil {
			return errors.New("fio is not installed: apt-get install fio, or run with --no-fio")
		}
	}
	stderr := cmd.ErrOrStderr()
	c.OnPoint = func(p sweep.Point) { printPoint(stderr, p) }

	devs, cleanup, err := sweep.Setup(cmd.Context(), c)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()

	report := cmd.OutOrStdout()
	if f.bench.json {
		report = stderr
	}
	printSetup(report, c, devs)
	points, runErr := sweep.Run(cmd.Context(), c, devs)
	// What was measured before a failure is still printed.
	if len(points) > 0 {
		fmt.Fprintln(report)
		if err := sweep.WriteGrids(report, sweep.Grids(points)); err != nil {
			return errors.Join(runErr, err)
		}
		if !f.bench.json {
			fmt.Fprintln(report)
		}
		if err := f.bench.emit(cmd.OutOrStdout(), sweep.Rows(points)); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// config turns the flags, and the profile where they are silent, into a
// sweep.
func (f *sweepFlags) config(cmd *cobra.Command) (sweep.Config, error) {
	full, err := f.bench.full()
	if err != nil {
		return sweep.Config{}, err
	}
	c := sweep.Quick()
	if full {
		c = sweep.Full()
	}
	c.Fio = !f.noFio

	fl := cmd.Flags()
	var errs []error
	if fl.Changed("qd") {
		if c.QDs, err = sweep.ParseQDs(f.qd); err != nil {
			errs = append(errs, fmt.Errorf("--qd: %w", err))
		}
	}
	if fl.Changed("bs") {
		if c.BlockSizes, err = sweep.ParseBlockSizes(f.bs); err != nil {
			errs = append(errs, fmt.Errorf("--bs: %w", err))
		}
	}
	if fl.Changed("size") {
		if c.Size, err = units.ParseSize(f.size); err != nil {
			errs = append(errs, fmt.Errorf("--size: %w", err))
		}
	}
	if fl.Changed("runtime") {
		if c.Runtime, err = units.ParseDuration(f.runtime); err != nil {
			errs = append(errs, fmt.Errorf("--runtime: %w", err))
		}
	}
	devices, flag := f.devices, "--device"
	if fl.Changed("target") {
		if fl.Changed("device") && f.bench.target != f.devices {
			errs = append(errs, errors.New("--target and --device name the same thing: give only --device"))
		}
		devices, flag = f.bench.target, "--target"
	}
	if c.Devices, err = sweep.ParseDevices(devices); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", flag, err))
	}
	return c, errors.Join(errs...)
}

// printSetup says what the sweep runs on: the devices, the data and the
// caches, as every RAM run of rsa-lab bench says.
func printSetup(w io.Writer, c sweep.Config, devs []sweep.Device) {
	for _, d := range devs {
		how := "buffered loop: the tmpfs' pages are the RAM"
		if d.DirectIO {
			how = "loop with direct I/O: no page cache between it and the disk"
		}
		fmt.Fprintf(w, "%s\t%s over %s (%s), %d-byte logical blocks\n", d.Name, d.Path, d.Backing, how, d.LogicalBlockSize)
	}
	check := "fio (libaio, iodepth QD, O_DIRECT) on every point"
	if !c.Fio {
		check = "none (--no-fio)"
	}
	fmt.Fprintf(w, "each point: %s written then read with O_DIRECT, capped at %v each; data random (incompressible); cross-check %s\n",
		sweep.SizeLabel(c.Size), c.Runtime, check)
}

// printPoint is a line of progress: a full sweep runs for most of an hour.
func printPoint(w io.Writer, p sweep.Point) {
	line := fmt.Sprintf("sweep: %s %s qd %d bs %s: ", p.Device, p.Direction, p.QD, sweep.SizeLabel(p.BlockSize))
	switch {
	case p.Skip != "":
		line += p.Skip
	case p.Fio != nil:
		line += fmt.Sprintf("%.1f MiB/s, fio %.1f", p.Rate(), *p.Fio)
	default:
		line += fmt.Sprintf("%.1f MiB/s", p.Rate())
	}
	fmt.Fprintln(w, line)
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

func joinSizes(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = sweep.SizeLabel(n)
	}
	return strings.Join(s, ",")
}
