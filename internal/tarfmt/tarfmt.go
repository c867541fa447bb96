// Package tarfmt knows what of the tar format archive/tar leaves to its
// callers: which members are GNU sparse files, which RSA's readers of tar
// (the mover's unpack, the erofs image builder) refuse rather than
// expand.
package tarfmt

import (
	"archive/tar"
	"strings"
)

// Sparse reports whether hdr is a sparse member: GNU tar's old sparse
// type, or one of its PAX sparse formats, which archive/tar presents as a
// regular file whose data is a sparse map followed by the data.
func Sparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
