package live

import (
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
)

func TestNewest(t *testing.T) {
	view := func(id int64, name string) api.JobView {
		return api.JobView{Job: job.Job{ID: id, Spec: job.Spec{SchedulerID: name}}}
	}
	jobs := []api.JobView{view(1, "7"), view(3, "7"), view(2, "7"), view(4, "8"), view(5, "9")}
	got := Newest(jobs, "7", "8", "10")
	if len(got) != 2 || got["7"].ID != 3 || got["8"].ID != 4 {
		t.Errorf("Newest = %v, want job 7 as record 3 and job 8 as record 4", got)
	}
	if all := Newest(jobs); len(all) != 3 || all["7"].ID != 3 || all["9"].ID != 5 {
		t.Errorf("Newest of every job = %v, want jobs 7, 8 and 9, 7 as record 3", all)
	}
}
