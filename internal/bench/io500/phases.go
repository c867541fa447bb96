// Package io500 runs the IO500 benchmark's phases (ior-easy, ior-hard,
// mdtest-easy, mdtest-hard and find) with the parameters the IO500
// harness gives them, on IOR and mdtest built from third_party/ior (the
// IOR commit the harness pins), and scores them as IO500 does.
//
// It is not the io500 harness: the harness and its parallel find (pfind)
// are not part of this repository, so the phases are driven from here and
// find is a walker of this package's own (the harness' "external script"
// mode). A run with a stonewall below IO500's 300 s is not a valid IO500
// submission, and every row says so.
package io500

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is the part of the IO500 score a phase counts in.
type Group string

const (
	Bandwidth Group = "bw" // GiB/s; the geometric mean of the ior phases
	Metadata  Group = "md" // kIOPS; the geometric mean of the mdtest phases and find
)

// Phase is one of IO500's phases.
type Phase struct {
	Name  string // IO500's name: "ior-easy-write"
	Group Group
	Tool  string // "ior", "mdtest" or "find"
	// Op is what the tool reports the phase as: IOR's "write" or "read",
	// mdtest's SUMMARY row ("File creation").
	Op string
}

// Phases are IO500's standard phases in the order the harness runs them
// (its timestamp, which find's -newer compares with, is taken between
// mdtest-easy-write and ior-hard-write).
var Phases = []Phase{
	{"ior-easy-write", Bandwidth, "ior", "write"},
	{"mdtest-easy-write", Metadata, "mdtest", "File creation"},
	{"ior-hard-write", Bandwidth, "ior", "write"},
	{"mdtest-hard-write", Metadata, "mdtest", "File creation"},
	{"find", Metadata, "find", ""},
	{"ior-easy-read", Bandwidth, "ior", "read"},
	{"mdtest-easy-stat", Metadata, "mdtest", "File stat"},
	{"ior-hard-read", Bandwidth, "ior", "read"},
	{"mdtest-hard-stat", Metadata, "mdtest", "File stat"},
	{"mdtest-easy-delete", Metadata, "mdtest", "File removal"},
	{"mdtest-hard-read", Metadata, "mdtest", "File read"},
	{"mdtest-hard-delete", Metadata, "mdtest", "File removal"},
}

// Writes reports whether the phase writes files into the data
// directory.
func (p Phase) Writes() bool { return strings.HasSuffix(p.Name, "-write") }

// Deletes reports whether the phase removes files from the data
// directory.
func (p Phase) Deletes() bool { return strings.HasSuffix(p.Name, "-delete") }

// TimestampAfter is the phase after which the harness takes its
// timestamp.
const TimestampAfter = "mdtest-easy-write"

// ComplianceStonewall is the write phases' stonewall IO500's rules ask
// for; a run with less is not a valid submission.
const ComplianceStonewall = 300 * time.Second

// Config is how a run goes.
type Config struct {
	// Data is the data directory, on the file system under test; Results
	// is where the stonewall files and the timestamp go (rank 0's, on the
	// host mpirun runs on).
	Data, Results string
	// Stonewall is how long each write phase writes (IOR's -D, mdtest's
	// -W), at least a second.
	Stonewall time.Duration
	// The caps: each rank's ior-easy file at most EasyBlock bytes (IOR's
	// -b), ior-hard at most HardSegments segments of 47,008 bytes,
	// mdtest-easy and mdtest-hard at most EasyFiles and HardFiles files
	// per rank. IO500's own are "unlimited" (the stonewall ends the
	// phase); a short run caps them so a fast target cannot fill its
	// memory before the stonewall.
	EasyBlock    string
	HardSegments int
	EasyFiles    int
	HardFiles    int
}

// Check reports a config a run cannot use.
func (c Config) Check() error {
	switch {
	case !filepath.IsAbs(c.Data) || !filepath.IsAbs(c.Results):
		return fmt.Errorf("io500: data %q and results %q: give absolute directories", c.Data, c.Results)
	case c.Stonewall < time.Second:
		return fmt.Errorf("io500: stonewall %s: give a second or more", c.Stonewall)
	case c.EasyBlock == "" || c.HardSegments < 1 || c.EasyFiles < 1 || c.HardFiles < 1:
		return fmt.Errorf("io500: caps (easy block %q, hard segments %d, easy files %d, hard files %d): give each above 0", c.EasyBlock, c.HardSegments, c.EasyFiles, c.HardFiles)
	}
	return nil
}

// Compliant reports whether the stonewall is IO500's.
func (c Config) Compliant() bool { return c.Stonewall >= ComplianceStonewall }

// The harness passes each tool a fixed signature (-G) per phase family,
// so that a read checks the pattern its write left; any fixed numbers do.
const (
	easySignature   = 271
	hardSignature   = 27
	mdEasySignature = 61
	mdHardSignature = 63
)

// Args are the phase's tool's arguments, as the harness builds them (its
// options for the CSV files of per-rank figures left out: nothing reads
// them), with the caps in place of IO500's unlimited sizes.
func (c Config) Args(p Phase) ([]string, error) {
	wall := strconv.Itoa(int(c.Stonewall / time.Second))
	res := func(name string) string { return filepath.Join(c.Results, name) }
	iorEasy := []string{"--dataPacketType=timestamp", "-g", "-G", strconv.Itoa(easySignature), "-k", "-e",
		"-o", filepath.Join(c.Data, "ior-easy", "ior_file_easy"), "-C", "-Q", "1",
		"-O", "stoneWallingStatusFile=" + res("ior-easy.stonewall"), "-t", "2m", "-b", c.EasyBlock, "-F"}
	iorHard := []string{"--dataPacketType=timestamp", "-C", "-Q", "1", "-g", "-G=" + strconv.Itoa(hardSignature), "-k", "-e",
		"-o", filepath.Join(c.Data, "ior-hard", "file"), "-O", "stoneWallingStatusFile=" + res("ior-hard.stonewall"),
		"-t", "47008", "-b", "47008", "-s", strconv.Itoa(c.HardSegments)}
	mdEasy := []string{"--dataPacketType=timestamp", "-n", strconv.Itoa(c.EasyFiles), "-u", "-L", "-F", "-P",
		"-G", strconv.Itoa(mdEasySignature), "-N", "1", "-d", filepath.Join(c.Data, "mdtest-easy"), "-x", res("mdtest-easy.stonewall")}
	mdHard := []string{"--dataPacketType=timestamp", "-n", strconv.Itoa(c.HardFiles), "-t", "-w", "3901", "-e", "3901", "-P",
		"-G=" + strconv.Itoa(mdHardSignature), "-N", "1", "-F", "-d", filepath.Join(c.Data, "mdtest-hard"), "-x", res("mdtest-hard.stonewall")}
	with := func(base []string, more ...string) []string { return append(base[:len(base):len(base)], more...) }
	switch p.Name {
	case "ior-easy-write":
		return with(iorEasy, "-w", "-D", wall, "-O", "stoneWallingWearOut=1", "-a", "POSIX"), nil
	case "ior-easy-read":
		return with(iorEasy, "-r", "-R", "-a", "POSIX"), nil
	case "ior-hard-write":
		return with(iorHard, "-w", "-D", wall, "-a", "POSIX", "-O", "stoneWallingWearOut=1"), nil
	case "ior-hard-read":
		return with(iorHard, "-r", "-R", "-a", "POSIX"), nil
	case "mdtest-easy-write":
		return with(mdEasy, "-C", "-Y", "-W", wall, "-a", "POSIX"), nil
	case "mdtest-easy-stat":
		return with(mdEasy, "-T", "-a", "POSIX"), nil
	case "mdtest-easy-delete":
		return with(mdEasy, "-r", "-a", "POSIX"), nil
	case "mdtest-hard-write":
		return with(mdHard, "-C", "-Y", "-W", wall, "-a", "POSIX"), nil
	case "mdtest-hard-stat":
		return with(mdHard, "-T", "-a", "POSIX"), nil
	case "mdtest-hard-read":
		return with(mdHard, "-E", "-X", "-a", "POSIX"), nil
	case "mdtest-hard-delete":
		return with(mdHard, "-r", "-a", "POSIX"), nil
	}
	return nil, fmt.Errorf("io500: phase %q runs no IOR or mdtest", p.Name)
}

// Dirs are the data directories the harness makes before the phases.
func (c Config) Dirs() []string {
	var out []string
	for _, d := range []string{"ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"} {
		out = append(out, filepath.Join(c.Data, d))
	}
	return out
}

// TimestampFile is the file whose modification time find's -newer
// compares with.
func (c Config) TimestampFile() string { return filepath.Join(c.Results, "timestampfile") }
