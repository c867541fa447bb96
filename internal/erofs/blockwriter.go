package erofs

import (
	"fmt"
	"io"
)

// blockWriter writes one region of the image front to back through a
// buffer, so that thousands of small files cost a few large writes.
type blockWriter struct {
	w   io.WriterAt
	off int64 // image offset of buf[0]
	buf []byte
	err error
}

func newBlockWriter(w io.WriterAt, off int64, bufSize int) *blockWriter {
	return &blockWriter{w: w, off: off, buf: make([]byte, 0, bufSize)}
}

// pos is the image offset the next byte goes to.
func (b *blockWriter) pos() int64 { return b.off + int64(len(b.buf)) }

func (b *blockWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && b.err == nil {
		if len(b.buf) == cap(b.buf) {
			b.flush()
			continue
		}
		c := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf = b.buf[:len(b.buf)+c]
		p = p[c:]
	}
	if b.err != nil {
		return 0, b.err
	}
	return n, nil
}

// zeros writes n zero bytes.
func (b *blockWriter) zeros(n int64) {
	for n > 0 && b.err == nil {
		if len(b.buf) == cap(b.buf) {
			b.flush()
			continue
		}
		c := min(n, int64(cap(b.buf)-len(b.buf)))
		start := len(b.buf)
		b.buf = b.buf[:start+int(c)]
		clear(b.buf[start:])
		n -= c
	}
}

// padTo writes zeros up to the image offset end.
func (b *blockWriter) padTo(end int64) {
	if p := b.pos(); end > p {
		b.zeros(end - p)
	}
}

// alignBlock pads with zeros to the next block boundary.
func (b *blockWriter) alignBlock() {
	b.padTo(roundUp(b.pos(), blockSize))
}

func (b *blockWriter) flush() error {
	if b.err != nil || len(b.buf) == 0 {
		return b.err
	}
	if _, err := b.w.WriteAt(b.buf, b.off); err != nil {
		b.err = fmt.Errorf("writing the image at offset %d: %w", b.off, err)
		return b.err
	}
	b.off += int64(len(b.buf))
	b.buf = b.buf[:0]
	return nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// readFrom copies exactly n bytes from r into the region. A short r is
// io.ErrUnexpectedEOF.
func (b *blockWriter) readFrom(r io.Reader, n int64) error {
	for n > 0 {
		if b.err != nil {
			return b.err
		}
		if len(b.buf) == cap(b.buf) {
			b.flush()
			continue
		}
		space := b.buf[len(b.buf):cap(b.buf)]
		if int64(len(space)) > n {
			space = space[:n]
		}
		m, err := r.Read(space)
		b.buf = b.buf[:len(b.buf)+m]
		n -= int64(m)
		if err == io.EOF && n > 0 {
			return io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	return b.err
}
