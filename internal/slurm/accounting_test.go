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
