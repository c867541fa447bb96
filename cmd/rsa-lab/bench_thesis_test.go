package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The thesis' jobs run through the product's rsa: the one named, else the
// one beside rsa-lab, else rsa on PATH; always by an absolute path, which
// the job's user runs.
func TestProductBinary(t *testing.T) {
	dir := t.TempDir()
	lab := filepath.Join(dir, "bin", "rsa-lab")
	beside := filepath.Join(dir, "bin", "rsa")
	onPath := filepath.Join(dir, "path", "rsa")
	for _, f := range []string{lab, beside, onPath} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", filepath.Dir(onPath))
	got, err := productBinary("", lab)
	if err != nil || got != beside {
		t.Errorf("beside rsa-lab: %q, %v; want %q", got, err, beside)
	}
	if got, err := productBinary(onPath, lab); err != nil || got != onPath {
		t.Errorf("--rsa %s: %q, %v", onPath, got, err)
	}
	if err := os.Remove(beside); err != nil {
		t.Fatal(err)
	}
	if got, err := productBinary("", lab); err != nil || got != onPath {
		t.Errorf("none beside rsa-lab: %q, %v; want PATH's %q", got, err, onPath)
	}
	t.Setenv("PATH", "")
	if _, err := productBinary("", lab); err == nil || !strings.Contains(err.Error(), "--rsa") {
		t.Errorf("no rsa anywhere: %v, want an error naming --rsa", err)
	}
	if _, err := productBinary(filepath.Join(dir, "nothing"), lab); err == nil {
		t.Error("--rsa naming no file: accepted")
	}
}
