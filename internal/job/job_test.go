package job

import (
	"strings"
	"testing"
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
