package mount

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The mount table on kernels without listmount(2) and statmount(2) (before
// Linux 6.8): /proc/self/mountinfo. It is read as a stream, a field at a
// time, so no line is too long to read: a user can make a mount point as
// long as they like by moving a directory above it, and each field is
// kept only up to the bytes its caller needs (the rest is skipped, and the
// field marked as cut). A mount ID there is the kernel's 32-bit one, which
// is reused as soon as its mount goes; callers therefore check a mount's
// identity along with its ID before acting on it (unmountID).

// mountinfoPath is the calling thread's mount table (its mount namespace).
const mountinfoPath = "/proc/thread-self/mountinfo"

// mountinfoLimits bound what a read of mountinfo keeps of each mount.
type mountinfoLimits struct {
	// point is the bytes of the mount point kept; a longer one is cut.
	// They are counted unescaped: up to four times as many are read
	// (a space is written \040).
	point   int
	strings int // bytes of the root, type, source and options
	// only, if not 0, is the one mount whose point is kept: the others'
	// are cut at once, so that reading one mount's long point never costs
	// as much for every other mount.
	only uint64
}

// readMountinfo reads the mount table of this thread's mount namespace
// into a map by mount ID.
func readMountinfo(lim mountinfoLimits) (map[uint64]statmount, []uint64, error) {
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	return parseMountinfo(bufio.NewReaderSize(f, 64<<10), lim)
}

// parseMountinfo parses mountinfo(5) lines:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// ID, parent ID, major:minor, root, mount point, mount options, optional
// fields ended by "-", type, source, super block options. Paths and the
// source have space, tab, newline and backslash escaped in octal.
func parseMountinfo(r *bufio.Reader, lim mountinfoLimits) (map[uint64]statmount, []uint64, error) {
	byID := map[uint64]statmount{}
	var ids []uint64
	for line := 1; ; line++ {
		sm, err := parseMountinfoLine(r, lim)
		if err == io.EOF {
			return byID, ids, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the mount table (%s), line %d: %w", mountinfoPath, line, err)
		}
		if _, dup := byID[sm.id]; !dup {
			ids = append(ids, sm.id)
		}
		byID[sm.id] = sm
	}
}

// errCut marks a field longer than was kept.
var errCut = errors.New("cut")

func parseMountinfoLine(r *bufio.Reader, lim mountinfoLimits) (statmount, error) {
	var sm statmount
	var fields [6]string
	caps := [6]int{32, 32, 32, lim.strings, 4 * lim.point, lim.strings}
	for i := range fields {
		if i == 4 && lim.only != 0 && fields[0] != strconv.FormatUint(lim.only, 10) {
			caps[i] = 0
		}
		s, eol, err := readField(r, caps[i])
		if err == io.EOF && i == 0 && s == "" {
			return sm, io.EOF
		}
		if errors.Is(err, errCut) {
			switch i {
			case 4:
				sm.pointCut = true
			case 3:
			default:
				return sm, fmt.Errorf("field %d is longer than %d bytes", i+1, caps[i])
			}
		} else if err != nil {
			return sm, unexpectedEOF(err)
		}
		if eol {
			return sm, errors.New("the line ends early")
		}
		fields[i] = s
	}
	// Optional fields, up to the separator.
	for {
		s, eol, err := readField(r, 256)
		if err != nil && !errors.Is(err, errCut) {
			return sm, unexpectedEOF(err)
		}
		if eol {
			return sm, errors.New("no \" - \" separator")
		}
		if s == "-" {
			break
		}
	}
	var tail [3]string
	for i := range tail {
		s, eol, err := readField(r, lim.strings)
		if err != nil && !errors.Is(err, errCut) && !(err == io.EOF && i == len(tail)-1) {
			return sm, unexpectedEOF(err)
		}
		tail[i] = s
		if eol && i < len(tail)-1 {
			return sm, errors.New("the line ends early")
		}
		if !eol && i == len(tail)-1 {
			if err := skipLine(r); err != nil && err != io.EOF {
				return sm, err
			}
		}
	}
	id, err := strconv.ParseUint(fields[0], 10, 32)
	if err != nil {
		return sm, fmt.Errorf("mount ID %q: %w", fields[0], err)
	}
	parent, err := strconv.ParseUint(fields[1], 10, 32)
	if err != nil {
		return sm, fmt.Errorf("parent ID %q: %w", fields[1], err)
	}
	major, minor, ok := strings.Cut(fields[2], ":")
	maj, err1 := strconv.ParseUint(major, 10, 32)
	mnr, err2 := strconv.ParseUint(minor, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return sm, fmt.Errorf("device %q is not major:minor", fields[2])
	}
	sm.id, sm.parent, sm.oldID = id, parent, uint32(id)
	sm.devMajor, sm.devMinor = uint32(maj), uint32(mnr)
	sm.root = unescapeMountinfo(fields[3])
	sm.point, sm.hasPoint = unescapeMountinfo(fields[4]), true
	sm.attr = mountAttrs(fields[5])
	sm.fsType, sm.subtype, _ = strings.Cut(unescapeMountinfo(tail[0]), ".")
	sm.source = unescapeMountinfo(tail[1])
	sm.superOptions = tail[2]
	sm.mask = statmountIdentity | statmountMntRoot | statmountMntPoint
	return sm, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readField reads one space-separated field of at most max bytes (the
// rest is read and dropped, and errCut returned with what was kept), and
// reports whether it ended its line.
func readField(r *bufio.Reader, max int) (string, bool, error) {
	var b strings.Builder
	cut := false
	for {
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return b.String(), true, nil
			}
			return b.String(), true, err
		}
		switch c {
		case ' ':
			if cut {
				return b.String(), false, errCut
			}
			return b.String(), false, nil
		case '\n':
			if cut {
				return b.String(), true, errCut
			}
			return b.String(), true, nil
		}
		if b.Len() < max {
			b.WriteByte(c)
		} else {
			cut = true
		}
	}
}

// skipLine reads up to and including the next newline.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// mountAttrs maps mountinfo's per-mount options to MOUNT_ATTR_* flags, as
// statmount reports them.
func mountAttrs(options string) uint64 {
	var attr uint64
	for _, o := range strings.Split(options, ",") {
		attr |= mountOptionAttrs[o]
	}
	return attr
}

// mountOptionAttrs are the per-mount options mountinfo shows that have a
// MOUNT_ATTR_* flag.
var mountOptionAttrs = map[string]uint64{
	"ro":          unix.MOUNT_ATTR_RDONLY,
	"nosuid":      unix.MOUNT_ATTR_NOSUID,
	"nodev":       unix.MOUNT_ATTR_NODEV,
	"noexec":      unix.MOUNT_ATTR_NOEXEC,
	"noatime":     unix.MOUNT_ATTR_NOATIME,
	"nodiratime":  unix.MOUNT_ATTR_NODIRATIME,
	"nosymfollow": unix.MOUNT_ATTR_NOSYMFOLLOW,
}
