package stage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	sd := newStageDirs(t)
	r, args := sd.fakeMover(t)
	for _, prog := range []string{"", ModePack} {
		if err := r.Run(context.Background(), Task{Job: 3, Phase: "stage-out", User: sd.who, Program: prog, Ramdisk: sd.ram, Data: sd.data}); err != nil {
			t.Fatal(err)
		}
		if a := args(); !strings.Contains(a, "--verify") {
			t.Errorf("stage-out %q ran the mover without --verify: %s", prog, a)
		}
	}
}

// The built-in stage-in writes final names (rsa copy without --atomic)
// only when the task says no one can look, and into a RAMDISK that can
// lose a part unseen (Partial) only with the listing checked after the
// copy; an unpack has no tree to list, and keeps its temporary names
// there. A stage-out, into the user's own directory, never writes final
// names.
func TestBuiltInPrivateOnlyWhereSafe(t *testing.T) {
	sd := newStageDirs(t)
	r, args := sd.fakeMover(t)
	for _, tt := range []struct {
		phase                Phase
		program              string
		private, partial     bool
		wantPrivate, wantChk bool
	}{
		{"stage-in", "", true, false, true, false},
		{"stage-in", ModeUnpack, true, false, true, false},
		{"stage-in", "", false, false, false, false},
		{"stage-in", ModeUnpack, false, false, false, false},
		{"stage-in", "", true, true, true, true},
		{"stage-in", ModeUnpack, true, true, false, false},
		{"stage-in", "", false, true, false, false},
		{"stage-out", "", true, false, false, false},
		{"stage-out", "", true, true, false, false},
		{"stage-out", ModePack, true, false, false, false},
	} {
		task := Task{Job: 3, Phase: tt.phase, User: sd.who, Program: tt.program, Ramdisk: sd.ram, Data: sd.data, Private: tt.private, Partial: tt.partial}
		if err := r.Run(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		a := args()
		if got, chk := !strings.Contains(a, "--atomic"), strings.Contains(a, "--check-listing"); got != tt.wantPrivate || chk != tt.wantChk || a == "" {
			t.Errorf("%s %q with Private=%v, Partial=%v ran: %q; want final names (no --atomic): %v, --check-listing: %v",
				tt.phase, tt.program, tt.private, tt.partial, a, tt.wantPrivate, tt.wantChk)
		}
	}
}
