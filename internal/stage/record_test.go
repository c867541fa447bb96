package stage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFileRecordAsArchiveTar: Pack's own formatter of small files' records
// writes the very bytes archive/tar writes for the same file, and declines
// what it does not format, leaving it to archive/tar.
func TestFileRecordAsArchiveTar(t *testing.T) {
	long := func(n int) string { return strings.Repeat("n", n) }
	tests := []struct {
		name   string
		file   string
		mode   uint32
		uid    uint32
		sec    int64
		nsec   int64
		size   int
		xattrs map[string]string
		wantOK bool
	}{
		{name: "whole seconds, no pax header", file: "a", mode: 0o644, uid: 1000, sec: 1700000000, size: 4096, wantOK: true},
		{name: "nanoseconds", file: "d/f", mode: 0o600, uid: 1000, sec: 1700000000, nsec: 123456789, size: 4096, wantOK: true},
		{name: "nanoseconds with trailing zeros", file: "d/e/f", mode: 0o644, sec: 1700000000, nsec: 120000000, size: 10, wantOK: true},
		{name: "one nanosecond", file: "f", mode: 0o644, sec: 1, nsec: 1, size: 1, wantOK: true},
		{name: "empty", file: "d/empty", mode: 0o644, sec: 1700000000, nsec: 5, wantOK: true},
		{name: "a block", file: "b", mode: 0o644, sec: 1700000000, size: 512, wantOK: true},
		{name: "a block and a byte", file: "b", mode: 0o644, sec: 1700000000, size: 513, wantOK: true},
		{name: "set-uid, set-gid, sticky", file: "s", mode: 0o7755, sec: 1700000000, size: 3, wantOK: true},
		{name: "time zero", file: "z", mode: 0o644, sec: 0, size: 3, wantOK: true},
		{name: "largest uid in the field", file: "u", mode: 0o644, uid: 1<<21 - 1, sec: 1700000000, size: 3, wantOK: true},
		{name: "xattrs, sorted with mtime", file: "x/y", mode: 0o644, sec: 1700000000, nsec: 9, size: 100,
			xattrs: map[string]string{"user.b": "2", "user.a": "one\x00two\nthree", "user.mtime": "k"}, wantOK: true},
		{name: "a record whose length gains a digit", file: "x", mode: 0o644, sec: 1700000000, size: 5,
			xattrs: map[string]string{"user.v": long(78)}, wantOK: true},
		{name: "name of 100 bytes", file: long(100), mode: 0o644, sec: 1700000000, nsec: 7, size: 5, wantOK: true},
		{name: "pax header's name cut at 100", file: "dir/" + long(90), mode: 0o644, sec: 1700000000, nsec: 7, size: 5, wantOK: true},
		{name: "name of 101 bytes", file: long(101), mode: 0o644, sec: 1700000000, size: 5},
		{name: "name not ASCII", file: "é", mode: 0o644, sec: 1700000000, size: 5},
		{name: "uid beyond the field", file: "u", mode: 0o644, uid: 1 << 21, sec: 1700000000, size: 5},
		{name: "time before 1970", file: "t", mode: 0o644, sec: -1, nsec: 5, size: 5},
		{name: "time beyond the field", file: "t", mode: 0o644, sec: 1 << 33, size: 5},
		{name: "xattr name with =", file: "x", mode: 0o644, sec: 1700000000, size: 5, xattrs: map[string]string{"user.a=b": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("ab\x00"), tt.size)[:tt.size]
			info := &statInfo{name: tt.file, st: syscall.Stat_t{Mode: syscall.S_IFREG | tt.mode, Uid: tt.uid, Gid: 100, Size: int64(tt.size),
				Mtim: syscall.Timespec{Sec: tt.sec, Nsec: tt.nsec}}}
			prefix := []byte("before")
			got, ok := appendFileHeader(prefix, tt.file, &info.st, tt.xattrs)
			if ok {
				got = padBlock(append(got, body...), len(prefix))
			}
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				if string(got) != "before" {
					t.Errorf("declined, but changed b to %q", got)
				}
				return
			}
			hdr, err := tarHeader("/nonexistent", tt.file, info, false)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.xattrs {
				if hdr.PAXRecords == nil {
					hdr.PAXRecords = map[string]string{}
				}
				hdr.PAXRecords["SCHILY.xattr."+k] = v
			}
			var want bytes.Buffer
			tw := tar.NewWriter(&want)
			if err := tw.WriteHeader(hdr); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := tw.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("b's first bytes changed to %q", got[:len(prefix)])
			}
			if g, w := got[len(prefix):], want.Bytes(); !bytes.Equal(g, w) {
				i := 0
				for i < min(len(g), len(w)) && g[i] == w[i] {
					i++
				}
				t.Errorf("record differs from archive/tar's (%d bytes, want %d) from byte %d: %q, want %q", len(g), len(w), i,
					g[i:min(len(g), i+40)], w[i:min(len(w), i+40)])
			}
		})
	}
}

// userXattrs reads every user.* attribute, also when their names do not
// fit its first buffer, through a descriptor and through a path alike.
func TestUserXattrsLongList(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 12 { // 12 names of 40 bytes: past the 256-byte first try
		name := fmt.Sprintf("user.%s%02d", strings.Repeat("x", 33), i)
		want[name] = fmt.Sprint(i)
		if err := unix.Setxattr(p, name, []byte(want[name]), 0); err != nil {
			t.Fatalf("this test needs user xattrs in %s: %v", p, err)
		}
	}
	fd, err := unix.Open(p, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for what, got := range map[string]map[string]string{"fd": fxattrs(fd), "path": userXattrs(xattrSource{path: p})} {
		if !maps.Equal(got, want) {
			t.Errorf("by %s: %d attributes %v, want %d", what, len(got), got, len(want))
		}
	}
}

// TestSumUSTAR holds the word-wise checksum to the byte loop it replaced,
// on blocks of every byte value up to all 0xff (the most a lane takes).
func TestSumUSTAR(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		h := make([]byte, 512)
		switch i {
		case 0: // all zero
		case 1:
			for j := range h {
				h[j] = 0xff
			}
		default:
			for j := range h {
				h[j] = byte(rnd.UintN(256))
			}
		}
		want := 0
		for j, c := range h {
			switch {
			case j >= 148 && j < 156:
				c = ' '
			case j >= 257 && j < 265:
				c = "ustar\x0000"[j-257]
			}
			want += int(c)
		}
		sumUSTAR(h)
		got, err := strconv.ParseInt(string(h[148:154]), 8, 64)
		if err != nil || got != int64(want) || h[154] != 0 || h[155] != ' ' {
			t.Fatalf("block %d: checksum field %q, want %06o NUL space", i, h[148:156], want)
		}
	}
}

// The header of a file with a nanosecond mtime and no xattrs, the record
// pack writes for nearly every file, costs no allocation.
func TestFileHeaderAllocs(t *testing.T) {
	st := syscall.Stat_t{Mode: syscall.S_IFREG | 0o644, Uid: 1000, Gid: 100, Size: 4096, Mtim: syscall.Timespec{Sec: 1700000000, Nsec: 123456789}}
	b := make([]byte, 0, 8192)
	if n := testing.AllocsPerRun(100, func() { b, _ = appendFileHeader(b[:0], "d0012/f000123", &st, nil) }); n != 0 {
		t.Errorf("appendFileHeader: %.0f allocations a file, want 0", n)
	}
}
