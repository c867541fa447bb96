package tarfmt

import (
	"archive/tar"
	"testing"
)

func TestSparse(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
		want bool
	}{
		{"regular file", tar.Header{Typeflag: tar.TypeReg}, false},
		{"GNU old sparse type", tar.Header{Typeflag: tar.TypeGNUSparse}, true},
		{"PAX 0.1 sparse map", tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"GNU.sparse.map": "0,1"}}, true},
		{"PAX 1.0 sparse", tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"GNU.sparse.major": "1"}}, true},
		{"other PAX records", tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"SCHILY.xattr.user.a": "b"}}, false},
	} {
		if got := Sparse(&tc.hdr); got != tc.want {
			t.Errorf("%s: Sparse = %v, want %v", tc.name, got, tc.want)
		}
	}
}
