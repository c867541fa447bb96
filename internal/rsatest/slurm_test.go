package rsatest

import (
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
)

func TestJobID(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"42\n", "42"},
		{"42;cluster\n", "42"},
		{"", ""},
	} {
		if got := JobID(c.out); got != c.want {
			t.Errorf("JobID(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestNewestJobs(t *testing.T) {
	view := func(id int64, name string) api.JobView {
		return api.JobView{Job: job.Job{ID: id, Spec: job.Spec{Name: name}}}
	}
	jobs := []api.JobView{view(1, "7"), view(3, "7"), view(2, "7"), view(4, "8"), view(5, "9")}
	got := NewestJobs(jobs, "7", "8", "10")
	if len(got) != 2 || got["7"].ID != 3 || got["8"].ID != 4 {
		t.Errorf("NewestJobs = %v, want job 7 as record 3 and job 8 as record 4", got)
	}
	if all := NewestJobs(jobs); len(all) != 3 || all["7"].ID != 3 || all["9"].ID != 5 {
		t.Errorf("NewestJobs of every job = %v, want jobs 7, 8 and 9, 7 as record 3", all)
	}
}

func TestEnded(t *testing.T) {
	for state, want := range map[string]bool{"COMPLETED": true, "CANCELLED": true, "NODE_FAIL": true, "RUNNING": false, "PENDING": false, "": false} {
		if got := Ended(state); got != want {
			t.Errorf("Ended(%q) = %v, want %v", state, got, want)
		}
	}
}
