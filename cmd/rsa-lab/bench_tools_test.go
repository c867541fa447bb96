package main

import (
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench/tools"
)

// The built-in job files parse, every tool has jobs in every profile, and
// each seed program has numbers beside the quick profile's rows.
func TestBuiltinJobs(t *testing.T) {
	set, err := tools.Load(builtinJobs())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tools.Profiles {
		for _, tool := range tools.Tools {
			jobs, err := set.Select(p, []tools.Tool{tool})
			if err != nil || len(jobs) == 0 {
				t.Errorf("profile %s: no %s job (%v)", p, tool, err)
			}
		}
	}
	quick, err := set.Select("quick", tools.Tools)
	if err != nil {
		t.Fatal(err)
	}
	seeded := map[tools.Tool]int{}
	for _, j := range quick {
		for _, s := range j.Seeds {
			if s.Profile == "" || s.Profile == "quick" {
				seeded[j.Tool]++
			}
		}
	}
	for _, tool := range tools.Tools {
		if seeded[tool] == 0 {
			t.Errorf("no %s job of the quick profile has a seed's number", tool)
		}
	}
	if len(set.Unmatched) == 0 {
		t.Error("no seed test is listed as without a counterpart")
	}
	if _, err := toolSections(); err != nil {
		t.Error(err)
	}
}
