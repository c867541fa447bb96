package mptio

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// alignedBuffer is a record buffer that O_DIRECT accepts: mapped memory
// starts on a page boundary, which is stricter than any device's logical
// block size. The Go heap gives no such promise.
type alignedBuffer struct {
	mapped []byte // the whole mapping, whole pages
	rec    []byte // the record: mapped[:record size]
}

func newAlignedBuffer(size int64) (*alignedBuffer, error) {
	page := int64(unix.Getpagesize())
	m, err := unix.Mmap(-1, 0, int(roundUp(size, page)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map a %d-byte record buffer: %w", size, err)
	}
	return &alignedBuffer{mapped: m, rec: m[:size]}, nil
}

func (b *alignedBuffer) free() error {
	if err := unix.Munmap(b.mapped); err != nil {
		return fmt.Errorf("unmap record buffer: %w", err)
	}
	return nil
}
