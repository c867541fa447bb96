package erofs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
)

func buildMem(t *testing.T, members []member) []byte {
	t.Helper()
	var img memImage
	if _, err := FromTar(context.Background(), bytes.NewReader(tarOf(t, members)), &img, Limits{}); err != nil {
		t.Fatal(err)
	}
	return img.b
}

func TestCheckRefusesDamage(t *testing.T) {
	good := buildMem(t, roundTripTrees()["links"])
	if err := Check(bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatalf("Check refuses a good image: %v", err)
	}
	sb := func(b []byte) []byte { return b[superOffset:] }
	meta := func(b []byte) []byte {
		return b[int64(binary.LittleEndian.Uint32(sb(b)[40:]))*blockSize:]
	}
	// resum recomputes the superblock checksum, so the damage is what
	// Check must find rather than a checksum mismatch.
	resum := func(b []byte) {
		binary.LittleEndian.PutUint32(sb(b)[4:], superblockChecksum(sb(b)))
	}
	tests := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated by a block", func(b []byte) []byte { return b[:len(b)-blockSize] }},
		{"truncated mid-block", func(b []byte) []byte { return b[:len(b)-100] }},
		{"longer than its blocks", func(b []byte) []byte { return append(b, make([]byte, blockSize)...) }},
		{"no magic", func(b []byte) []byte { sb(b)[0] = 0; return b }},
		{"checksum mismatch", func(b []byte) []byte { sb(b)[64] = 'x'; return b }},
		{"block size", func(b []byte) []byte { sb(b)[12] = 9; resum(b); return b }},
		{"incompatible feature", func(b []byte) []byte { sb(b)[80] = 1; resum(b); return b }},
		{"root is a file", func(b []byte) []byte {
			binary.LittleEndian.PutUint16(meta(b)[4:], modeRegular|0o644)
			return b
		}},
		{"root nid outside", func(b []byte) []byte {
			binary.LittleEndian.PutUint16(sb(b)[14:], 0xffff)
			resum(b)
			return b
		}},
		{"data blocks outside", func(b []byte) []byte {
			meta(b)[0] &^= 0x7 << 1 // FLAT_PLAIN: the blocks are at i_u
			binary.LittleEndian.PutUint32(meta(b)[16:], 0xfffffff0)
			return b
		}},
		{"bad layout", func(b []byte) []byte { meta(b)[0] |= 3 << 1; return b }},
		{"device inode", func(b []byte) []byte {
			binary.LittleEndian.PutUint16(meta(b)[4:], 0o020644)
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := tt.damage(bytes.Clone(good))
			err := Check(bytes.NewReader(img), int64(len(img)))
			t.Log(err)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
		})
	}
}

// Every directory's dirents are damaged in turn: Check refuses each
// image, and never panics.
func TestCheckRefusesDamagedDirents(t *testing.T) {
	good := buildMem(t, roundTripTrees()["deep"])
	for off := blockSize; off < len(good); off++ {
		img := bytes.Clone(good)
		img[off] ^= 0xff
		_ = Check(bytes.NewReader(img), int64(len(img)))
	}
}

func TestDeterministic(t *testing.T) {
	for name, members := range roundTripTrees() {
		a, b := buildMem(t, members), buildMem(t, members)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds of the same stream differ", name)
		}
	}
}
