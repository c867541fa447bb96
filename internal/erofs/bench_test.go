package erofs

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFromTar100k4K builds an image of 100,000 files of 4 KiB in 100
// directories from a tar in a temporary file: the shape of RSA's
// small-file staging study.
func BenchmarkFromTar100k4K(b *testing.B) {
	const dirs, perDir, size = 100, 1000, 4096
	tmp := b.TempDir()
	tarPath := filepath.Join(tmp, "in.tar")
	tf, err := os.Create(tarPath)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(tf, 1<<20)
	tw := tar.NewWriter(bw)
	data := bytesOf(size, 7)
	for d := range dirs {
		hdr := &tar.Header{Name: fmt.Sprintf("d%03d/", d), Typeflag: tar.TypeDir, Mode: 0o755, ModTime: t0, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			b.Fatal(err)
		}
		for i := range perDir {
			hdr := &tar.Header{Name: fmt.Sprintf("d%03d/f%04d", d, i), Typeflag: tar.TypeReg, Mode: 0o644,
				Uid: 4242, Gid: 4242, ModTime: tn, Size: size, Format: tar.FormatPAX}
			if err := tw.WriteHeader(hdr); err != nil {
				b.Fatal(err)
			}
			if _, err := tw.Write(data); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	tf.Close()

	out, err := os.Create(filepath.Join(tmp, "image.erofs"))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	b.ReportAllocs()
	b.SetBytes(dirs * perDir * size)
	var st Stats
	for b.Loop() {
		in, err := os.Open(tarPath)
		if err != nil {
			b.Fatal(err)
		}
		if err := out.Truncate(0); err != nil {
			b.Fatal(err)
		}
		st, err = FromTar(context.Background(), in, out, Limits{})
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(dirs*perDir*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(st.ImageBytes), "image-bytes")
}
