package main

import (
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench/thesis"
)

func TestParseModelCell(t *testing.T) {
	got, err := parseModelCell("1gbit:512x4M")
	if want := (thesis.ModelCell{Rate: "1gbit", Ranks: 512, Size: 4 << 20}); err != nil || got != want {
		t.Errorf("1gbit:512x4M = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "1gbit", "1gbit:512", ":512x4M", "1gbit:0x4M", "1gbit:ax4M", "1gbit:512x0", "1gbit:512xlots"} {
		if _, err := parseModelCell(bad); err == nil || !strings.Contains(err.Error(), "RATE:RANKSxSIZE") {
			t.Errorf("%q: %v, want an error showing the form", bad, err)
		}
	}
}
