package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		v    string
		want string // "" = accepted
	}{
		{"/home/alice/input", ""},
		{"/scratch/ünïcode dir/ok", ""},
		{"/x\nBASH_ENV=/tmp/evil.sh", "U+000A"},
		{"/x\rfoo", "U+000D"},
		{"/x\tfoo", "U+0009"},
		{"/x\x00foo", "U+0000"},
		{"/x\x1b[2Jfoo", "U+001B"},
		{"/x\x7ffoo", "U+007F"},
		{"/x\u009bfoo", "U+009B"}, // C1 CSI
		{"/x\xff", "not valid UTF-8"},
	} {
		err := CheckText("input directory", c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q refused: %v", c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "input directory")):
			t.Errorf("%q: %v, want an error naming the field and %s", c.v, err, c.want)
		}
	}
}

func TestStagedString(t *testing.T) {
	for _, c := range []struct {
		s    Staged
		want string
	}{
		{Staged{}, ""},
		{Staged{In: Amount{Files: 12, Bytes: 3 << 20}}, "in 12 files 3.0M"},
		{Staged{Out: Amount{Files: 1, Bytes: 0}}, "out 1 files 0B"},
		{Staged{In: Amount{Files: 2, Bytes: 2 << 30}, Out: Amount{Files: 3, Bytes: 1 << 10}}, "in 2 files 2.0G, out 3 files 1.0K"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.s, got, c.want)
		}
	}
}

// Await returns when check is done, is woken by each change, gives up
// quietly when wait passes, and returns check's error.
func TestAwait(t *testing.T) {
	ctx := context.Background()
	ch := make(chan struct{})
	changed := func() <-chan struct{} { return ch }
	calls := 0
	go func() { close(ch) }()
	err := Await(ctx, time.Minute, changed, func() (bool, error) { calls++; return calls == 2, nil })
	if err != nil || calls != 2 {
		t.Fatalf("Await = %v after %d checks; want done at the second, after a change", err, calls)
	}
	never := func() <-chan struct{} { return nil }
	start := time.Now()
	if err := Await(ctx, 20*time.Millisecond, never, func() (bool, error) { return false, nil }); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Await past its wait = %v after %v; want nil after 20ms", err, time.Since(start))
	}
	boom := errors.New("boom")
	if err := Await(ctx, time.Minute, never, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("Await = %v, want check's error", err)
	}
}
