package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

type copyFlags struct {
	user, bwlimit, progress, chunk string
	workers                        int
	verify, json, sync, private    bool
	durable                        bool
	atomic, checkListing           bool
	pack, unpack                   bool
	packFD                         int
	part                           string
	finish                         bool
}

func copyCmd() *cobra.Command {
	var f copyFlags
	cmd := &cobra.Command{
		Use:   "copy [flags] SRC DST",
		Short: "Copy a tree in parallel, safely and verifiably (RSA's mover)",
		Long: `Copy the tree at SRC into DST, like 'cp -a SRC/. DST/', with a pool of workers.
Keeps contents, directories, symlinks (never followed), hard links, sparse files,
permissions, nanosecond times and user.* extended attributes. In an empty DST
and the directories it makes, files are written under their final names at once,
as cp and tar do; elsewhere, and everywhere with --atomic, under a temporary name
renamed into place once complete. Times are set last, so running the same copy
again copies only what is missing or different, partial files included. Entries
that fail are listed with the reason, and the exit
status is non-zero.

As root, --user NAME runs the whole copy as that user (uid, gid and groups)
before any path is opened. The RSA daemon stages every job this way.

  rsa copy --verify /gpfs/proj/input /run/rsa/ramdisk/17
  rsa copy --pack  results/ /gpfs/proj/results.tar     # one POSIX tar, streamed
  rsa copy --unpack /gpfs/proj/input.tar /run/rsa/ramdisk/17`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.packFD > 0 {
				if !f.pack || len(args) != 1 {
					return errors.New("--pack-fd N writes the tar of SRC to descriptor N: give --pack and SRC alone")
				}
				return nil
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.user != "" {
				return copyAsUser(f.user)
			}
			dst := ""
			if len(args) == 2 {
				dst = args[1]
			}
			return runCopy(cmd, &f, args[0], dst)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.user, "user", "", "run as this user, NAME or UID (root only)")
	fl.IntVar(&f.workers, "workers", 0, "parallel workers (default: from the CPUs)")
	fl.BoolVar(&f.verify, "verify", false, "re-read both sides and compare content (xxh3); with a resumed copy, compare content instead of size and time")
	fl.StringVar(&f.bwlimit, "bwlimit", "", "cap the read rate from SRC, bytes per second, e.g. 200M")
	fl.StringVar(&f.progress, "progress", "auto", "progress: auto (a bar on a terminal), json (lines on stdout), none")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON")
	fl.BoolVar(&f.sync, "sync", false, "flush DST's file system before reporting success")
	fl.BoolVar(&f.durable, "durable", false, "make DST's storage hold every file before reporting success: --sync, and on a FUSE file system (Gluster) an fsync of each file")
	fl.BoolVar(&f.atomic, "atomic", false, "write every file under a temporary name renamed into place once complete, in an empty DST too: for a DST others read while the copy runs")
	fl.BoolVar(&f.private, "private", false, "final names in an empty DST, the default")
	fl.MarkDeprecated("private", "final names in an empty DST are the default; --atomic asks for temporary names")
	fl.BoolVar(&f.checkListing, "check-listing", false, "at the end, list DST and compare every name, kind and size with SRC (not the contents): for a DST that can lose part of itself during the copy, as a distributed file system whose server restarted empty")
	fl.StringVar(&f.chunk, "chunk-size", "64M", "large files are copied in chunks of this size (in parallel on Lustre, GPFS, BeeGFS, CephFS, OrangeFS; one after another into tmpfs)")
	fl.BoolVar(&f.pack, "pack", false, "write SRC as one POSIX tar file DST")
	fl.StringVar(&f.part, "part", "", "copy share K/N of SRC (0 <= K < N) into a DST the other shares write at once, from other hosts; then one --finish run completes it")
	fl.BoolVar(&f.finish, "finish", false, "after every --part K/N copy of SRC into DST: copy the multiply linked files, set the directories' attributes (with --check-listing, list DST against SRC)")
	fl.IntVar(&f.packFD, "pack-fd", 0, "with --pack, write the tar stream to this open descriptor (3 or more) instead of a file DST")
	fl.BoolVar(&f.unpack, "unpack", false, "extract the tar file SRC (or every *.tar in the directory SRC) into the directory DST")
	return cmd
}

// copyAsUser re-runs this command as the named user: a child with the
// user's credentials does all the work, so no path is opened as root.
func copyAsUser(name string) error {
	if os.Geteuid() != 0 {
		return errors.New("--user is for root; as a normal user, copies run as you")
	}
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return fmt.Errorf("--user %q: no such user", name)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if uid == 0 {
		return errors.New("--user: copying as root is what --user avoids; name a normal user")
	}
	var groups []uint32
	ids, _ := u.GroupIds()
	for _, g := range ids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			groups = append(groups, uint32(n))
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var args []string
	skip := false
	for _, a := range os.Args[1:] {
		switch {
		case skip:
			skip = false
		case a == "--user":
			skip = true
		case strings.HasPrefix(a, "--user="):
		default:
			args = append(args, a)
		}
	}
	c := exec.Command(self, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.HomeDir, "USER=" + u.Username, "LANG=C.UTF-8"}
	c.Dir = "/"
	c.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups},
		Pdeathsig:  syscall.SIGKILL,
	}
	runtime.LockOSThread()
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitCode(ee.ExitCode())
	}
	return err
}

// runCopy runs rsa copy as f says, from src to dst ("" with --pack-fd),
// and prints its summary; the error is the copy's, or a flag's value it
// cannot take (then with no summary).
func runCopy(cmd *cobra.Command, f *copyFlags, src, dst string) error {
	tuneRuntime(f.workers)
	m, err := f.mover()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	bar := &progressBar{}
	if err := f.showProgress(m, enc, bar); err != nil {
		return err
	}
	start := time.Now()
	if err := f.checkMode(); err != nil {
		return err
	}
	if !f.pack && !f.unpack {
		if mkErr := os.MkdirAll(dst, 0o700); mkErr != nil {
			return fmt.Errorf("destination: %w", mkErr)
		}
	}
	st, err := f.transfer(cmd.Context(), m, src, dst)
	bar.clear()
	f.summary(enc, st, time.Since(start).Seconds(), err)
	return err
}

// tuneRuntime sets up Go's runtime for a copy with workers workers (0:
// from the CPUs).
func tuneRuntime(workers int) {
	// A worker blocked in a file system call (a cold inode, a remote
	// server) holds one of Go's Ps until the runtime notices; with only as
	// many Ps as cores, most workers would wait for a P rather than for
	// the disk. One P per worker keeps their I/O in flight (measured, 100,000
	// cold 4 KiB files on 2 cores: 4.7 s with 2 Ps, 3.7 s with 8; warm the
	// same).
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), stage.Workers(workers)))
	// With that many Ps on few cores, every collection's mark workers (a
	// quarter of the Ps) take cores from the copy. Its heap is mostly
	// buffers of bounded size (tens of MiB), so it is collected a fifth as
	// often: at most about five times the live heap in all. Measured, 7
	// interleaved runs of 100,000 x 4 KiB warm into tmpfs: copy 0.666 s
	// against 0.689 s, pack 0.652 s against 0.690 s, at a peak of 72 MiB
	// resident against 44 (copy) and 101 against 92 (pack). GOGC, when
	// set, wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
}

// mover is the Mover f asks for, but for its progress; a value of --part,
// --chunk-size or --bwlimit it cannot take, or --part or --finish with a
// mode other than the copy, is an error.
func (f *copyFlags) mover() (*stage.Mover, error) {
	m := &stage.Mover{Workers: f.workers, Verify: f.verify, Sync: f.sync, Durable: f.durable, Atomic: f.atomic, CheckListing: f.checkListing,
		// File names are the tree owner's: as root, a copy must not pass
		// their escapes to the terminal.
		Warn: func(path, why string) {
			fmt.Fprintf(os.Stderr, "rsa copy: %s: %s\n", textsafe.Line(path), textsafe.Line(why))
		}}
	var err error
	if f.part != "" {
		k, n, ok := strings.Cut(f.part, "/")
		m.Part.Index, err = strconv.Atoi(k)
		if ok && err == nil {
			m.Part.Of, err = strconv.Atoi(n)
		}
		if !ok || err != nil || m.Part.Check() != nil || m.Part.Of < 2 {
			return nil, fmt.Errorf("--part %q: give K/N, share K of N (0 <= K < N, N >= 2)", f.part)
		}
	}
	m.Part.Finish = f.finish
	if (f.part != "" || f.finish) && (f.pack || f.unpack || f.atomic) {
		return nil, errors.New("--part and --finish split a copy of a tree into an empty DST: not with --pack, --unpack or --atomic")
	}
	if m.ChunkSize, err = units.ParseSize(f.chunk); err != nil || m.ChunkSize < 1<<20 {
		return nil, fmt.Errorf("--chunk-size %q: give a size of at least 1M", f.chunk)
	}
	m.BigFile = 4 * m.ChunkSize
	if f.bwlimit != "" {
		if m.BWLimit, err = units.ParseSize(f.bwlimit); err != nil || m.BWLimit < 1<<10 {
			return nil, fmt.Errorf("--bwlimit %q: give bytes per second, e.g. 200M", f.bwlimit)
		}
	}
	return m, nil
}

// showProgress makes m report its progress as --progress asks: as JSON
// lines through enc, or on bar if stderr is a terminal.
func (f *copyFlags) showProgress(m *stage.Mover, enc *json.Encoder, bar *progressBar) error {
	switch f.progress {
	case "json":
		m.Progress = func(p stage.Progress) { enc.Encode(stage.Line{Progress: &p}) }
	case "auto":
		if _, err := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS); err == nil {
			bar.start = time.Now()
			m.Progress = bar.show
		}
	case "none":
	default:
		return fmt.Errorf("--progress %q: use auto, json or none", f.progress)
	}
	return nil
}

// checkMode refuses the flags of the modes that exclude each other.
func (f *copyFlags) checkMode() error {
	switch {
	case f.pack && f.unpack:
		return errors.New("--pack and --unpack exclude each other")
	case f.checkListing && (f.pack || f.unpack):
		return errors.New("--check-listing compares a copied tree with its source; with --pack use --verify, with --unpack --atomic")
	case f.pack && f.packFD > 0 && (f.packFD < 3 || f.verify || f.sync || f.durable):
		return errors.New("--pack-fd: give a descriptor of 3 or more, without --verify, --sync or --durable (a stream cannot be re-read or flushed)")
	}
	return nil
}

// transfer runs m in the mode f asks for (checkMode passed, and a copy's
// dst made): a pack into a file or onto --pack-fd (which it closes), an
// unpack, or a copy.
func (f *copyFlags) transfer(ctx context.Context, m *stage.Mover, src, dst string) (stage.Stats, error) {
	switch {
	case f.pack && f.packFD > 0:
		out := os.NewFile(uintptr(f.packFD), "tar stream")
		st, err := m.PackTo(ctx, src, out)
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing the tar stream: %w", cerr)
		}
		return st, err
	case f.pack:
		return m.Pack(ctx, src, dst) // verified with m.Verify
	case f.unpack:
		return m.UnpackAll(ctx, src, dst)
	default:
		return m.Copy(ctx, src, dst)
	}
}

// summary prints what a copy of secs seconds did, and err, its error: a
// JSON line with --json, else a line of text (the error is the caller's
// to print).
func (f *copyFlags) summary(enc *json.Encoder, st stage.Stats, secs float64, err error) {
	if f.json {
		l := stage.Line{Done: &st, Seconds: secs}
		if err != nil {
			l.Error = err.Error()
		}
		enc.Encode(l)
	} else {
		rate := float64(st.Bytes) / max(secs, 1e-9)
		fmt.Printf("copied %d files (%s) in %.2fs, %s/s; %d dirs, %d symlinks, %d hard links; %d already in place, %d failed\n",
			st.Files, units.FormatSize(st.Bytes), secs, units.FormatSize(int64(rate)), st.Dirs, st.Links, st.HardLinks, st.Skipped, st.Failed)
	}
}

// progressBar draws one self-rewriting line on stderr.
type progressBar struct {
	start time.Time
	drawn bool
}

func (b *progressBar) show(p stage.Progress) {
	el := time.Since(b.start).Seconds()
	rate := float64(p.Bytes) / max(el, 1e-9)
	line := fmt.Sprintf("%d", p.Files)
	if p.TotalFiles > 0 {
		line += fmt.Sprintf("/%d", p.TotalFiles)
	}
	line += " files  " + units.FormatSize(p.Bytes)
	if p.TotalBytes > 0 {
		pct := 100 * float64(p.Bytes) / float64(p.TotalBytes)
		line += fmt.Sprintf("/%s (%.0f%%)", units.FormatSize(p.TotalBytes), pct)
		if rate > 0 && p.TotalBytes > p.Bytes {
			line += "  ETA " + time.Duration(float64(p.TotalBytes-p.Bytes)/rate*1e9).Round(time.Second).String()
		}
	}
	line += "  " + units.FormatSize(int64(rate)) + "/s"
	fmt.Fprint(os.Stderr, "\r\033[K"+line)
	b.drawn = true
}

func (b *progressBar) clear() {
	if b.drawn {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}
