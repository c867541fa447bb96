// Package holders finds the processes that keep a file system alive: an
// open file, a working or root directory, a memory mapping inside it, or a
// mount of it in their mount namespace. A RAMDISK that is unmounted while
// such a process lives keeps its RAM; RSA finds these processes before it
// counts the RAM free, and ends them (package daemon decides which, and
// when).
//
// It reads /proc only, and never asks the file systems involved: every
// stat is made with AT_STATX_DONT_SYNC on /proc's magic links, so a user's
// stalled FUSE or NFS mount cannot hang the search.
package holders

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Holder is one process holding the file system.
type Holder struct {
	PID       int
	UID       uint32
	Comm      string // its command name, as /proc/PID/comm has it
	What      string // how it holds it: "cwd", "root", "fd 3", "mapping", "mount namespace"
	StartTime uint64 // clock ticks after boot: with PID, names the process across pid reuse
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d (%s, uid %d) by its %s", h.PID, strconv.Quote(h.Comm), h.UID, h.What)
}

// Find lists the processes that hold the file system with device number
// dev. Processes that vanish while it looks are skipped.
func Find(ctx context.Context, dev uint64) ([]Holder, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	self := os.Getpid()
	ownNS, _ := os.Readlink("/proc/self/ns/mnt")
	nsHolds := map[string]bool{} // mount namespace -> holds dev
	var out []Holder
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		what := holds(pid, dev, ownNS, nsHolds)
		if what == "" {
			continue
		}
		h := Holder{PID: pid, What: what}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) != nil {
			continue // gone
		}
		h.UID = st.Uid
		if b, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil {
			h.Comm = strings.TrimSpace(string(b))
		}
		if h.StartTime, err = StartTime(pid); err != nil {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// holds says how process pid holds dev, or "".
func holds(pid int, dev uint64, ownNS string, nsHolds map[string]bool) string {
	base := "/proc/" + strconv.Itoa(pid)
	for _, l := range []string{"cwd", "root"} {
		if on(base+"/"+l, dev) {
			return l
		}
	}
	if fds, err := os.ReadDir(base + "/fd"); err == nil {
		for _, fd := range fds {
			if on(base+"/fd/"+fd.Name(), dev) {
				return "fd " + fd.Name()
			}
		}
	}
	if mapsHold(base+"/maps", dev) {
		return "mapping"
	}
	if ns, err := os.Readlink(base + "/ns/mnt"); err == nil && ns != ownNS {
		held, seen := nsHolds[ns]
		if !seen {
			held = mountinfoHolds(base+"/mountinfo", dev)
			nsHolds[ns] = held
		}
		if held {
			return "mount namespace"
		}
	}
	return ""
}

// on reports whether the magic link at p leads into dev, without asking
// the file system it leads to.
func on(p string, dev uint64) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_STATX_DONT_SYNC, 0, &st); err != nil {
		return false
	}
	return unix.Mkdev(st.Dev_major, st.Dev_minor) == dev
}

// mapsHold reads /proc/PID/maps ("addr perms offset MAJ:MIN inode path",
// device in hex) for a mapping of a file on dev.
func mapsHold(p string, dev uint64) bool {
	want := fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
	found := false
	eachLine(p, func(l []byte) bool {
		f := bytes.Fields(l)
		if len(f) >= 4 && devEqual(string(f[3]), want, 16) {
			found = true
			return false
		}
		return true
	})
	return found
}

// mountinfoHolds reads another namespace's mount table ("ID PARENT
// MAJ:MIN ...", device in decimal) for a mount of dev.
func mountinfoHolds(p string, dev uint64) bool {
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	found := false
	eachLine(p, func(l []byte) bool {
		f := bytes.Fields(l)
		if len(f) >= 3 && string(f[2]) == want {
			found = true
			return false
		}
		return true
	})
	return found
}

func devEqual(have, want string, base int) bool {
	if have == want {
		return true
	}
	hm, hn, ok1 := strings.Cut(have, ":")
	wm, wn, ok2 := strings.Cut(want, ":")
	if !ok1 || !ok2 {
		return false
	}
	a, e1 := strconv.ParseUint(hm, base, 32)
	b, e2 := strconv.ParseUint(hn, base, 32)
	c, e3 := strconv.ParseUint(wm, base, 32)
	d, e4 := strconv.ParseUint(wn, base, 32)
	return e1 == nil && e2 == nil && e3 == nil && e4 == nil && a == c && b == d
}

// eachLine calls fn with the first 4 KiB of every line of the file at p
// (the fields it needs come first; a user can make the rest of a line as
// long as they like) until fn returns false.
func eachLine(p string, fn func([]byte) bool) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && !fn(line) {
			return
		}
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of a long line
			_, err = r.ReadSlice('\n')
		}
		if err == io.EOF || err != nil {
			return
		}
	}
}

// StartTime reads a process' start time (clock ticks after boot) from
// /proc/PID/stat, which with the pid identifies it across pid reuse.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Signal sends sig to h if it is still the same process (pidfd: no pid
// reuse can redirect it). A process that is gone is not an error.
func Signal(h Holder, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(h.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening pid %d: %w", h.PID, err)
	}
	defer unix.Close(fd)
	if st, err := StartTime(h.PID); err != nil || st != h.StartTime {
		return nil // another process has the pid now; h is gone
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signalling pid %d: %w", h.PID, err)
	}
	return nil
}
