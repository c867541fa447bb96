package stage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// An archive that does not hold what RAM holds fails verification: a
// member changed, a file missing from the archive.
func TestVerifyArchiveCatchesAWrongArchive(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(src, n), []byte(strings.Repeat(n, 5000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(t.TempDir(), "out.tar")
	if _, err := (&Mover{}).Pack(ctx, src, archive); err != nil {
		t.Fatal(err)
	}
	if err := VerifyArchive(ctx, src, archive); err != nil {
		t.Fatalf("a good archive fails verification: %v", err)
	}
	// The same length, one byte different, inside a member.
	b, _ := os.ReadFile(archive)
	i := strings.Index(string(b), strings.Repeat("b", 100))
	b[i+50] = 'X'
	os.WriteFile(archive, b, 0o644)
	if err := VerifyArchive(ctx, src, archive); err == nil {
		t.Fatal("an archive with a changed member passed verification")
	}
	// RAM holds a file the archive lacks.
	if _, err := (&Mover{}).Pack(ctx, src, archive); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "d"), []byte("late"), 0o644)
	if err := VerifyArchive(ctx, src, archive); err == nil {
		t.Fatal("an archive missing a file passed verification")
	}
}

// Every built-in stage-out asks the mover to verify before it reports
// success (dropping --verify must fail a test).
func TestBuiltInStageOutVerifies(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	who := Identity{UID: u.UID, GID: u.GID, Name: u.Name, Home: u.Home}
	ram := testutil.MkdirOwned(t, u, filepath.Join(dir, "ram"))
	data := testutil.MkdirOwned(t, u, filepath.Join(dir, "data"))
	argsFile := filepath.Join(ram, "args")
	fake := filepath.Join(dir, "rsa")
	os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" >> "+argsFile+"\n"), 0o755)
	r := &Runner{Self: fake, Cgroups: testCgroups(t)}
	for _, prog := range []string{"", ModePack} {
		os.Remove(argsFile)
		if err := r.Run(context.Background(), Task{Job: 3, Phase: "stage-out", User: who, Program: prog, Ramdisk: ram, Data: data}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(argsFile)
		if !strings.Contains(string(b), "--verify") {
			t.Errorf("stage-out %q ran the mover without --verify: %s", prog, b)
		}
	}
}

// The built-in stage-in writes final names (rsa copy --private) only when
// the task says no one can look and nothing can go missing unseen; a
// stage-out, into the user's own directory, never does.
func TestBuiltInPrivateOnlyWhereSafe(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	who := Identity{UID: u.UID, GID: u.GID, Name: u.Name, Home: u.Home}
	ram := testutil.MkdirOwned(t, u, filepath.Join(dir, "ram"))
	data := testutil.MkdirOwned(t, u, filepath.Join(dir, "data"))
	argsFile := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "rsa")
	os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\n"), 0o755)
	os.WriteFile(argsFile, nil, 0o666)
	os.Chmod(argsFile, 0o666) // past the umask: the fake runs as the user
	r := &Runner{Self: fake, Cgroups: testCgroups(t)}
	for _, tt := range []struct {
		phase, program string
		private, want  bool
	}{
		{"stage-in", "", true, true},
		{"stage-in", ModeUnpack, true, true},
		{"stage-in", "", false, false},
		{"stage-in", ModeUnpack, false, false},
		{"stage-out", "", true, false},
		{"stage-out", ModePack, true, false},
	} {
		if err := r.Run(context.Background(), Task{Job: 3, Phase: tt.phase, User: who, Program: tt.program, Ramdisk: ram, Data: data, Private: tt.private}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(argsFile)
		if got := strings.Contains(string(b), "--private"); got != tt.want || len(b) == 0 {
			t.Errorf("%s %q with Private=%v ran: %q; want --private: %v", tt.phase, tt.program, tt.private, b, tt.want)
		}
	}
}
