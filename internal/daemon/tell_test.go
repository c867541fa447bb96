package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/notify"
)

// tellDaemon is a daemon whose notification program records each call as
// a file in the returned directory: its arguments, then its message.
func tellDaemon(t *testing.T) (*Daemon, string) {
	t.Helper()
	d := startDaemon(t, 1, 1<<30, time.Second)
	dir := t.TempDir()
	prog := filepath.Join(dir, "mail")
	// Written aside and renamed: a call is seen whole or not at all.
	script := "#!/bin/sh\nf=$(mktemp " + dir + "/tmp.XXXXXX)\nprintf '%s\\n' \"$@\" > $f\ncat >> $f\nmv $f " + dir + "/call.${f##*.}\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.cfg.Notify = config.Notify{Program: prog, HeldAfter: 24 * time.Hour, Timeout: 10 * time.Second}
	d.tell = notify.NewTeller(d.cfg.Notify)
	t.Cleanup(d.wg.Wait)
	return d, dir
}

// calls waits for want calls of the program and returns them.
func calls(t *testing.T, dir string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fs, _ := filepath.Glob(filepath.Join(dir, "call.??????"))
		if len(fs) >= want {
			var out []string
			for _, f := range fs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls of the notification program after 10 s, want %d", len(fs), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A failed stage-out tells the job's user once, as it is committed, and
// records when; output still held a day later is told again, once per
// held_after; a job whose output was retried is not.
func TestTellFailedStageOutAndRemind(t *testing.T) {
	d, dir := tellDaemon(t)
	ctx := context.Background()
	j := slurmJobOf(t, d, "4242", lifecycle.Finished, lifecycle.StagingOut, 1<<20)
	failedAt := time.Now()
	got, err := d.apply(ctx, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvStageOutFailed, At: failedAt, Reason: "disk quota exceeded"}})
	if err != nil || got.RSA != lifecycle.StageOutFailed {
		t.Fatalf("the stage-out's failure: %v, %v", got, err)
	}
	c := calls(t, dir, 1)
	if want := "-s\nRSA job " + strconv.FormatInt(j.ID, 10) + " (Slurm job 4242): stage-out failed\n" + j.User + "\n"; !strings.HasPrefix(c[0], want) || !strings.Contains(c[0], "disk quota exceeded") {
		t.Fatalf("the notice:\n%s\nwant it to begin %q and say why", c[0], want)
	}
	if rec, _ := d.store.Get(ctx, j.ID); !rec.NoticeAt.Equal(failedAt) {
		t.Fatalf("NoticeAt %v, want the failure's %v", rec.NoticeAt, failedAt)
	}

	d.remindHeld(ctx, failedAt.Add(time.Hour))
	d.remindHeld(ctx, failedAt.Add(23*time.Hour))
	time.Sleep(100 * time.Millisecond)
	if n := len(calls(t, dir, 1)); n != 1 {
		t.Fatalf("%d notices before held_after, want the first alone", n)
	}
	day := failedAt.Add(24*time.Hour + time.Minute)
	d.remindHeld(ctx, day)
	c = calls(t, dir, 2)
	if !strings.Contains(strings.Join(c, ""), "output held in RAM") {
		t.Fatalf("no reminder a day later:\n%s", strings.Join(c, "\n--\n"))
	}
	if rec, _ := d.store.Get(ctx, j.ID); !rec.NoticeAt.Equal(day) {
		t.Fatalf("NoticeAt %v after the reminder, want %v", rec.NoticeAt, day)
	}
	d.remindHeld(ctx, day.Add(2*time.Minute))
	time.Sleep(100 * time.Millisecond)
	if n := len(calls(t, dir, 2)); n != 2 {
		t.Fatalf("%d notices, want no second reminder within held_after", n)
	}
	// Retried (as the loop's commit of the retry leaves it; its action is
	// no matter here): nothing waits any more, nothing is told.
	rec, err := d.store.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec.RSA = lifecycle.StagingOut
	if err := d.store.Commit(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	d.remindHeld(ctx, day.Add(49*time.Hour))
	time.Sleep(100 * time.Millisecond)
	if n := len(calls(t, dir, 2)); n != 2 {
		t.Fatalf("%d notices, want none for a job being retried", n)
	}
	if log := stageLog(t, d, j); strings.Count(log, "told "+j.User) != 2 {
		t.Errorf("the job's log does not record the two notices:\n%s", log)
	}
}

// Without a program nobody is told and nothing is recorded.
func TestTellNobodyWithoutProgram(t *testing.T) {
	d := startDaemon(t, 1, 1<<30, time.Second)
	ctx := context.Background()
	j := slurmJobOf(t, d, "7", lifecycle.Finished, lifecycle.StagingOut, 1<<20)
	got, err := d.apply(ctx, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvStageOutFailed, At: time.Now(), Reason: "x"}})
	if err != nil || got.RSA != lifecycle.StageOutFailed || !got.NoticeAt.IsZero() {
		t.Fatalf("%+v, %v: want STAGE_OUT_FAILED with no notice recorded", got, err)
	}
	d.remindHeld(ctx, time.Now().Add(72*time.Hour))
}

// What a change tells the job's user: a stage-out that failed, output
// lost; nothing for a change that keeps the state or leaves those.
func TestNoticeFor(t *testing.T) {
	cases := []struct {
		from, to lifecycle.RSAState
		want     notify.Kind
	}{
		{lifecycle.StagingOut, lifecycle.StageOutFailed, notify.StageOutFailed},
		{lifecycle.InUseOut, lifecycle.OutputLost, notify.OutputLost},
		{lifecycle.StageOutFailed, lifecycle.OutputLost, notify.OutputLost},
		{lifecycle.StageOutFailed, lifecycle.StageOutFailed, ""},
		{lifecycle.StageOutFailed, lifecycle.StagingOut, ""},
		{lifecycle.StagingOut, lifecycle.DoneStagingOut, ""},
		{lifecycle.Teardown, lifecycle.TeardownFailed, ""},
	}
	for _, c := range cases {
		got, tell := notify.For(&job.Job{RSA: c.from}, &job.Job{RSA: c.to})
		if got != c.want || tell != (c.want != "") {
			t.Errorf("%s -> %s: %q, %v; want %q", c.from, c.to, got, tell, c.want)
		}
	}
}
