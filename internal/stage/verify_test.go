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
