package mptio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
)

// Every record the benchmark writes carries stamps that say where it
// belongs, so that -C can tell a record that landed in the wrong place, was
// torn or lost from one that is right:
//
//	[0:8]    the stamp word: stampWritten, or stampModified once the
//	         read-modify-write test has changed it (the "one word" it
//	         modifies)
//	[8:16]   the record's byte offset in its file or device
//	[16:24]  the key of the file (a hash of its name)
//	[24:n-8] the run's fill: pseudo-random bytes from the seed, the same in
//	         every record, so that compressing or deduplicating storage
//	         sees data it cannot shrink
//	[n-8:n]  the offset again, which a torn record gets wrong
//
// Records shorter than stampedRecord carry only the fill.
const (
	stampWritten  uint64 = 0x52572d4f4954504d // "MPTIO-WR" as little-endian bytes
	stampModified uint64 = 0x444d2d4f4954504d // "MPTIO-MD"
)

// fill writes the run's fill pattern over rec: the same bytes for the same
// seed and record size, whoever calls it.
func fill(rec []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6d7074696f))
	i := 0
	for ; i+8 <= len(rec); i += 8 {
		binary.LittleEndian.PutUint64(rec[i:], r.Uint64())
	}
	for ; i < len(rec); i++ {
		rec[i] = byte(r.Uint64())
	}
}

// fileKey identifies a file in its records: by its base name, so that
// files kept with -K and checked by a later run in another directory agree.
func fileKey(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(filepath.Base(path)))
	return h.Sum64()
}

// stamp marks rec, which holds the fill, as the record at offset of the
// file with key.
func stamp(rec []byte, offset int64, key uint64) {
	if len(rec) < stampedRecord {
		return
	}
	le := binary.LittleEndian
	le.PutUint64(rec[0:], stampWritten)
	le.PutUint64(rec[8:], uint64(offset))
	le.PutUint64(rec[16:], key)
	le.PutUint64(rec[len(rec)-8:], uint64(offset))
}

// modify changes the one word of a read record that the read-modify-write
// test changes. It sets rather than toggles, so that threads overlapping
// with -O t leave the same record whatever their order.
func modify(rec []byte) {
	if len(rec) < stampedRecord {
		rec[0] ^= 0xff
		return
	}
	binary.LittleEndian.PutUint64(rec, stampModified)
}

// checkRecord reports how rec, read at offset of the file with key,
// differs from what the benchmark writes there; want holds the fill.
func checkRecord(rec, want []byte, offset int64, key uint64) error {
	le := binary.LittleEndian
	switch s := le.Uint64(rec); {
	case s != stampWritten && s != stampModified:
		return fmt.Errorf("record at offset %d: stamp %#x is not the benchmark's (never written, or overwritten)", offset, s)
	case int64(le.Uint64(rec[8:])) != offset:
		return fmt.Errorf("record at offset %d: holds the record of offset %d", offset, int64(le.Uint64(rec[8:])))
	case le.Uint64(rec[16:]) != key:
		return fmt.Errorf("record at offset %d: holds a record of another file", offset)
	case int64(le.Uint64(rec[len(rec)-8:])) != offset:
		return fmt.Errorf("record at offset %d: torn, its tail belongs to offset %d", offset, int64(le.Uint64(rec[len(rec)-8:])))
	case !bytes.Equal(rec[24:len(rec)-8], want[24:len(want)-8]):
		return fmt.Errorf("record at offset %d: contents differ from the fill pattern", offset)
	}
	return nil
}
