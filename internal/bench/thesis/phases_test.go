package thesis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// The write phase leaves a file a rank at its size; the read phase reads
// them back; each part is timed apart.
func TestFilePerProcessPhases(t *testing.T) {
	dir := t.TempDir()
	p := FilePerProcess{Dir: dir, Ranks: 16, Block: 3<<20 + 5, Transfer: 1 << 20}
	w, err := p.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Open <= 0 || w.Move <= 0 || w.Close <= 0 || w.Total() != w.Move+w.Close {
		t.Errorf("write phase %+v: every part timed, the total without the open", w)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != p.Ranks {
		t.Fatalf("%d files, want %d", len(ents), p.Ranks)
	}
	for r := range p.Ranks {
		st, err := os.Stat(filepath.Join(dir, IORFile(r)))
		if err != nil || st.Size() != p.Block {
			t.Errorf("rank %d's file: %v, %v; want %d bytes", r, st, err, p.Block)
		}
	}
	rd, err := p.Read(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if rd.Open <= 0 || rd.Move <= 0 || rd.Close <= 0 {
		t.Errorf("read phase %+v: every part timed", rd)
	}
	// A write phase creates: it refuses files that are there.
	if _, err := p.Write(context.Background()); err == nil || !strings.Contains(err.Error(), "16 of 16 ranks failed") {
		t.Errorf("second write over the files: %v, want every rank's create to fail", err)
	}
	// A short file fails its rank's read; the others still finish.
	if err := os.Truncate(filepath.Join(dir, IORFile(3)), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "1 of 16 ranks failed") {
		t.Errorf("read with a short file: %v, want one rank failed", err)
	}
	// Through another path to the same files (a second client's mount).
	other := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, other); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, IORFile(0))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, IORFile(3))); err != nil {
		t.Fatal(err)
	}
	if _, err := (FilePerProcess{Dir: dir, Ranks: 3, Block: p.Block}).Read(context.Background(), other); err != nil {
		t.Errorf("read through %s: %v", other, err)
	}
}

func TestFilePerProcessRefusesNothing(t *testing.T) {
	if _, err := (FilePerProcess{Dir: t.TempDir(), Ranks: 0, Block: 1}).Write(context.Background()); err == nil {
		t.Error("0 ranks: no error")
	}
	// A missing directory fails every open without leaving ranks waiting.
	if _, err := (FilePerProcess{Dir: filepath.Join(t.TempDir(), "none"), Ranks: 4, Block: 1}).Write(context.Background()); err == nil {
		t.Error("write into a missing directory: no error")
	}
}

func TestMountHolding(t *testing.T) {
	ms := []mount.Info{
		{Point: "/", FSType: "ext4", Source: "/dev/vda"},
		{Point: "/run", FSType: "tmpfs", Source: "tmpfs"},
		{Point: "/run/rsa-bench/shared@1g", FSType: "fuse.glusterfs", Source: "10.76.9.2:/shared"},
		{Point: "/run/rsa-bench/shared@1gx", FSType: "tmpfs", Source: "tmpfs"},
		{Point: "", FSType: "tmpfs", Source: "too long to read"},
	}
	for dir, want := range map[string]string{
		"/run/rsa-bench/shared@1g/t54-1": "/run/rsa-bench/shared@1g",
		"/run/rsa-bench/shared@1g":       "/run/rsa-bench/shared@1g",
		"/run/rsa-bench/shared@1gx/a":    "/run/rsa-bench/shared@1gx",
		"/run/rsa-bench/ram/t54":         "/run",
		"/var/tmp/x":                     "/",
	} {
		got, err := mountHolding(ms, dir)
		if err != nil || got.Point != want {
			t.Errorf("mount of %s = %+v, %v; want the one at %s", dir, got, err, want)
		}
	}
	if m, err := mountHolding(ms[1:], "/var/tmp"); err == nil {
		t.Errorf("/var/tmp with no root mount: %+v, no error", m)
	}
}
