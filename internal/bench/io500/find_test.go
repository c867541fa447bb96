package io500

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Find counts what GNU find counts for IO500's query, on a tree with
// every way a file can miss: name, size, age, a symbolic link, and files
// deep in directories.
func TestFindAgreesWithGNUFind(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	stamp := filepath.Join(t.TempDir(), "timestampfile")
	write := func(rel string, size int, mtime time.Time) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		write(fmt.Sprintf("easy/tree.%d/file.%d", i%7, i), 0, old) // before the stamp
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := time.Now().Add(-30 * time.Minute)
	if err := os.Chtimes(stamp, st, st); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 500 {
		size := 3901
		if i%9 == 0 {
			size = 3900 // the wrong size
		}
		write("hard/file.mdtest."+strconv.Itoa(i)+".0", size, now)
	}
	write("hard/x01-old", 3901, old) // right name and size, too old
	if err := os.Symlink(filepath.Join(root, "hard"), filepath.Join(root, "link01")); err != nil {
		t.Fatal(err)
	}

	got, err := Find(context.Background(), root, Query{Name: "01", Size: 3901, Newer: st}, 4)
	if err != nil {
		t.Fatal(err)
	}
	gnu := func(args ...string) int64 {
		out, err := exec.Command("find", append([]string{root}, args...)...).Output()
		if err != nil {
			t.Fatalf("find: %v", err)
		}
		return int64(strings.Count(string(out), "\n"))
	}
	wantMatched := gnu("-newer", stamp, "-size", "3901c", "-name", "*01*")
	wantScanned := gnu("-not", "-type", "d")
	if got.Matched != wantMatched || got.Scanned != wantScanned {
		t.Errorf("Find: %d matched of %d scanned; GNU find: %d of %d", got.Matched, got.Scanned, wantMatched, wantScanned)
	}
	if wantMatched == 0 {
		t.Error("the tree gives GNU find no match: the test checks nothing")
	}
}

func TestFindErrors(t *testing.T) {
	if _, err := Find(context.Background(), filepath.Join(t.TempDir(), "none"), Query{Name: "01"}, 2); err == nil {
		t.Error("a missing root: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Find(ctx, t.TempDir(), Query{Name: "01"}, 2); err == nil {
		t.Error("a cancelled context: no error")
	}
}
