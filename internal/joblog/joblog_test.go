package joblog

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAppendTailRemove(t *testing.T) {
	l := New(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := l.MakeDir(); err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1700000000, 42)
	l.Append(7, created, "first", "  a", "  b")
	l.Append(7, created, "second")
	l.Append(7, time.Time{}, "no record, no log")
	got := l.Tail(7, created, 1<<20)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], " first") || lines[1] != "  a" || lines[2] != "  b" || !strings.HasSuffix(lines[3], " second") {
		t.Fatalf("log = %q", got)
	}
	if tail := l.Tail(7, created, 7); tail != "second\n" {
		t.Fatalf("Tail(7) = %q, want the last 7 bytes", tail)
	}
	if st, err := os.Stat(l.Path(7, created)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("log file: %v, %v; want mode 0600", st, err)
	}
	if l.Path(7, created) == l.Path(7, created.Add(time.Nanosecond)) {
		t.Fatal("two records with one id share a log")
	}
	if err := l.Remove(7, created); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(7, created); err != nil {
		t.Fatalf("removing a log that is gone: %v", err)
	}
	if got := l.Tail(7, created, 10); got != "" {
		t.Fatalf("Tail of a removed log = %q", got)
	}
}
