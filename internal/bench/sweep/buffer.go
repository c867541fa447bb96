package sweep

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// alignedBuffer is memory O_DIRECT accepts: a mapping starts on a page
// boundary, stricter than any logical block size, which the Go heap does
// not promise.
type alignedBuffer []byte

func newAlignedBuffer(size int64) (alignedBuffer, error) {
	page := int64(unix.Getpagesize())
	m, err := unix.Mmap(-1, 0, int(roundUp(size, page)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map a %d-byte buffer: %w", size, err)
	}
	return m, nil
}

func (b alignedBuffer) free() error {
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("unmap buffer: %w", err)
	}
	return nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
