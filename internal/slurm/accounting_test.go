package slurm

import "testing"

func TestMergeAccounting(t *testing.T) {
	token := AccountingToken(1<<20, 12)
	if token != "rsa:in=1048576b/12f" {
		t.Fatalf("AccountingToken = %q", token)
	}
	for _, c := range []struct{ comment, want string }{
		{"", token},
		{"   ", token},
		{"rsa:in=1b/1f", token},
		{"project=abc", "project=abc;" + token},
		{"project=abc; cost centre 7", "project=abc; cost centre 7;" + token},
		{"a;rsa:in=1b/1f;b", "a;b;" + token},
		{" rsa:in=1b/1f ;a", "a;" + token},
		{"arsa:in=1b/1f", "arsa:in=1b/1f;" + token},
	} {
		if got := MergeAccounting(c.comment, token); got != c.want {
			t.Errorf("MergeAccounting(%q) = %q, want %q", c.comment, got, c.want)
		}
	}
}

func TestParseAccounting(t *testing.T) {
	for _, c := range []struct {
		comment      string
		bytes, files int64
		ok           bool
	}{
		{AccountingToken(1<<20, 12), 1 << 20, 12, true},
		{"project=abc;" + AccountingToken(5, 1), 5, 1, true},
		{"rsa:in=5b/1f ; cost centre 7", 5, 1, true},
		{"", 0, 0, false},
		{"project=abc", 0, 0, false},
		{"rsa:in=5/1", 0, 0, false},
		{"rsa:in=-5b/1f", 0, 0, false},
		{"rsa:in=xb/1f", 0, 0, false},
	} {
		b, f, ok := ParseAccounting(c.comment)
		if b != c.bytes || f != c.files || ok != c.ok {
			t.Errorf("ParseAccounting(%q) = %d, %d, %v; want %d, %d, %v", c.comment, b, f, ok, c.bytes, c.files, c.ok)
		}
	}
}
