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
