// Package erofstest makes small erofs images for the tests of the packages
// that mount them.
package erofstest

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/rsa-hpc/rsa/internal/erofs"
)

// WriteImage builds at path an erofs image of one file, hello ("world"),
// root's and mode 0400 as RSA's images are.
func WriteImage(t testing.TB, path string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: 5, Typeflag: tar.TypeReg})
	tw.Write([]byte("world"))
	tw.Close()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o400)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := erofs.FromTar(context.Background(), &buf, f, erofs.Limits{}); err != nil {
		t.Fatal(err)
	}
}
