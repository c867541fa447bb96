package crosscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoAt(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	plain := t.TempDir()
	if got, done, err := NoAt(plain); err != nil || got != plain {
		t.Errorf("NoAt(%s) = %s, %v; want it unchanged", plain, got, err)
	} else {
		done()
	}

	at := filepath.Join(t.TempDir(), "shared@1g")
	if err := os.Mkdir(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, done, err := NoAt(at)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "@") {
		t.Errorf("NoAt(%s) = %s, which holds an '@'", at, got)
	}
	if b, err := os.ReadFile(filepath.Join(got, "f")); err != nil || string(b) != "x" {
		t.Errorf("through %s: %q, %v; want the file in %s", got, b, err, at)
	}
	done()
	if _, err := os.Lstat(got); !os.IsNotExist(err) {
		t.Errorf("after done, %s: %v; want it gone", got, err)
	}
	if _, err := os.Stat(filepath.Join(at, "f")); err != nil {
		t.Errorf("done removed the directory's contents: %v", err)
	}
}
