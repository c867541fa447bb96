package stage

import (
	"encoding/binary"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// appendFileHeader appends to b the headers of a small regular file's tar
// record (a pax extended header where one is needed, then the ustar
// header) exactly as archive/tar writes them for tarHeader's header, without
// building a tar.Header and a tar.Writer per file: those were a sixth of
// packing 100,000 files of 4 KiB. The body follows, padded to a block
// (padBlock). ok is false, and b unchanged, for what it does not format (a
// name that is not ASCII or longer than a ustar name, an owner or time
// beyond the octal fields, an xattr name with '='): archive/tar writes
// those. TestFileRecordAsArchiveTar holds the two to the same bytes.
func appendFileHeader(b []byte, name string, st *syscall.Stat_t, xattrs map[string]string) ([]byte, bool) {
	secs, nsecs := st.Mtim.Sec, st.Mtim.Nsec
	if len(name) > ustarName || !isASCII(name) || strings.HasSuffix(name, "/") || path.Clean(name) != name ||
		!fitsOctal(int64(st.Uid), 8) || !fitsOctal(int64(st.Gid), 8) ||
		secs < 0 || !fitsOctal(secs, 12) || !fitsOctal(st.Size, 12) {
		return b, false
	}
	// The pax records: mtime alone (the common case) without an
	// allocation, as this runs once a file.
	var small [64]byte
	var payload []byte
	switch {
	case len(xattrs) == 0 && nsecs == 0:
	case len(xattrs) == 0:
		payload = appendMtimeRecord(small[:0], secs, nsecs)
	default:
		var pax []string
		if nsecs != 0 {
			pax = append(pax, string(appendMtimeRecord(small[:0], secs, nsecs)))
		}
		for k, v := range xattrs {
			k = "SCHILY.xattr." + k
			if strings.IndexByte(k, '=') >= 0 {
				return b, false
			}
			pax = append(pax, string(appendPaxRecord(nil, k, []byte(v))))
		}
		// In key order, as archive/tar writes them.
		slices.SortFunc(pax, func(a, b string) int { return strings.Compare(paxKey(a), paxKey(b)) })
		payload = []byte(strings.Join(pax, ""))
	}
	var h []byte
	if len(payload) > 0 {
		if len(payload) > 1<<20 {
			return b, false // archive/tar's limit for a pax header
		}
		start := len(b)
		b, h = growBlock(b)
		paxName(h[:ustarName], name)
		octal(h[100:108], 0)
		octal(h[108:116], 0)
		octal(h[116:124], 0)
		octal(h[124:136], int64(len(payload)))
		octal(h[136:148], 0)
		h[156] = 'x'
		sumUSTAR(h)
		b = append(b, payload...)
		b = padBlock(b, start)
	}
	b, h = growBlock(b)
	copy(h[0:], name)
	octal(h[100:108], int64(st.Mode&0o7777))
	octal(h[108:116], int64(st.Uid))
	octal(h[116:124], int64(st.Gid))
	octal(h[124:136], st.Size)
	octal(h[136:148], secs)
	h[156] = '0'
	octal(h[329:337], 0) // device numbers
	octal(h[337:345], 0)
	sumUSTAR(h)
	return b, true
}

// ustarName is the length of a ustar header's name field.
const ustarName = 100

// growBlock appends one zeroed 512-byte block to b and returns it too.
func growBlock(b []byte) ([]byte, []byte) {
	n := len(b)
	b = slices.Grow(b, 512)[:n+512]
	clear(b[n:])
	return b, b[n:]
}

// padBlock pads b with zeros to a whole number of 512-byte blocks after
// start.
func padBlock(b []byte, start int) []byte {
	if r := (len(b) - start) % 512; r != 0 {
		n := len(b)
		b = slices.Grow(b, 512-r)[:n+512-r]
		clear(b[n:])
	}
	return b
}

// sumUSTAR sets a header block's magic, version and checksum. The sum
// counts the checksum field as eight spaces, so they are written first; it
// adds eight bytes at a time in four 16-bit lanes (a byte loop was 9% of a
// pack of 100,000 small files): 64 words add at most 64 x 2 x 255 =
// 32,640 to a lane, which never carries into the next.
func sumUSTAR(h []byte) {
	h = h[:512]
	copy(h[257:], "ustar\x0000")
	copy(h[148:156], "        ")
	const everyOtherByte = 0x00ff00ff00ff00ff
	var lanes uint64
	for i := 0; i < 512; i += 8 {
		w := binary.LittleEndian.Uint64(h[i:])
		lanes += (w & everyOtherByte) + ((w >> 8) & everyOtherByte)
	}
	sum := lanes&0xffff + (lanes>>16)&0xffff + (lanes>>32)&0xffff + lanes>>48
	octal(h[148:155], int64(sum))
	h[155] = ' '
}

// octal writes x into a numeric field: zero-padded octal digits and a NUL.
func octal(f []byte, x int64) {
	for i := len(f) - 2; i >= 0; i-- {
		f[i] = byte('0' + x&7)
		x >>= 3
	}
	f[len(f)-1] = 0
}

// fitsOctal says whether x fits a numeric field of n bytes (n-1 digits).
func fitsOctal(x int64, n int) bool {
	return x >= 0 && x < 1<<(3*(n-1))
}

// appendMtimeRecord appends the pax record of mtime secs.nsecs, as
// archive/tar writes it: "LEN mtime=SECS.NANOS\n", trailing zeros of the
// fraction cut.
func appendMtimeRecord(b []byte, secs, nsecs int64) []byte {
	var v [32]byte
	t := strconv.AppendInt(v[:0], secs, 10)
	t = append(t, '.')
	n := len(t)
	t = append(t, "000000000"...)
	for i, x := n+8, nsecs; i >= n; i, x = i-1, x/10 {
		t[i] = byte('0' + x%10)
	}
	for t[len(t)-1] == '0' {
		t = t[:len(t)-1]
	}
	return appendPaxRecord(b, "mtime", t)
}

// appendPaxRecord appends one "LEN KEY=VALUE\n" record, LEN counting
// itself.
func appendPaxRecord(b []byte, k string, v []byte) []byte {
	size := len(k) + len(v) + 3
	d := decimalDigits(size)
	if decimalDigits(size+d) != d {
		d++
	}
	b = strconv.AppendInt(b, int64(size+d), 10)
	b = append(b, ' ')
	b = append(b, k...)
	b = append(b, '=')
	b = append(b, v...)
	return append(b, '\n')
}

func decimalDigits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// paxName writes the name archive/tar gives name's pax header,
// DIR/PaxHeaders.0/FILE, cut to the field f.
func paxName(f []byte, name string) {
	dir, file := path.Split(name)
	n := copy(f, dir)
	n += copy(f[n:], "PaxHeaders.0/")
	n += copy(f[n:], file)
	for n > 0 && f[n-1] == '/' {
		n--
		f[n] = 0
	}
}

// paxKey is a record's key.
func paxKey(r string) string {
	_, kv, _ := strings.Cut(r, " ")
	k, _, _ := strings.Cut(kv, "=")
	return k
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == 0 {
			return false
		}
	}
	return true
}
