package metabench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs every phase for real on a small scale, through two
// working directories that are one directory (a symlink stands in for a
// second mount), and checks what each phase leaves behind.
func TestRun(t *testing.T) {
	const nfile, nbyte = 31, 100
	tree := GlibcTree().Scaled(100)
	for _, tt := range []struct {
		nproc, n int
	}{{nproc: 1, n: 1}, {nproc: 4, n: 3}} {
		work := t.TempDir()
		mount2 := filepath.Join(t.TempDir(), "client1")
		if err := os.Symlink(work, mount2); err != nil {
			t.Fatal(err)
		}
		c := Config{
			NFile: nfile, NByte: nbyte, Freq: 7, NProc: tt.nproc,
			Dirs: []string{work, mount2}, Tree: tree, LocalDir: t.TempDir(),
		}
		rep, err := Run(context.Background(), c)
		if err != nil {
			t.Fatalf("nproc %d: %v", tt.nproc, err)
		}
		if len(rep.Results) != 12 {
			t.Fatalf("nproc %d: %d results, want 12", tt.nproc, len(rep.Results))
		}
		for _, res := range rep.Results {
			want := nfile
			if res.Phase == Untar {
				want = tt.n * tree.Files
			}
			if res.Ops != want {
				t.Errorf("nproc %d: %s did %d operations, want %d", tt.nproc, res.Phase, res.Ops, want)
			}
			procs := tt.n
			if res.Phase == CreateA {
				procs = 1
			}
			if len(res.Ranks) != procs {
				t.Errorf("nproc %d: %s ran on %d processes, want %d", tt.nproc, res.Phase, len(res.Ranks), procs)
			}
		}
		if b := rep.Results[0].Batches; len(b) != 5 || b[4].Files != 3 {
			t.Errorf("nproc %d: Create-A batches %+v, want 4 of 7 and 1 of 3", tt.nproc, b)
		}

		runs, err := filepath.Glob(filepath.Join(work, "metabench-*"))
		if err != nil || len(runs) != 1 {
			t.Fatalf("nproc %d: run directories %v, %v", tt.nproc, runs, err)
		}
		run := runs[0]
		check := func(rel string, wantDirs, wantFiles int, wantSize int64) {
			t.Helper()
			dirs, files, size := countTree(t, filepath.Join(run, rel))
			if dirs != wantDirs || files != wantFiles || size != wantSize {
				t.Errorf("nproc %d: %s holds %d dirs, %d files, %d bytes; want %d, %d, %d",
					tt.nproc, rel, dirs, files, size, wantDirs, wantFiles, wantSize)
			}
		}
		perProc := tt.n // a directory per participant in the A phases
		check("create-a", 0, nfile, 0)
		check("create-b", perProc, nfile, 0)
		check("create-c", 0, nfile, 0)
		check("stat-a", perProc, nfile, 0)
		check("stat-b", 0, nfile, 0)
		check("utime-a", perProc, nfile, 0)
		check("utime-b", 0, nfile, 0)
		check("append-a", perProc, nfile, nfile*nbyte)
		check("append-b", 0, nfile, nfile*nbyte)
		check("untar", tt.n*(1+tree.Dirs), tt.n*tree.Files, int64(tt.n)*tree.Bytes)
		check("delete-a", perProc, 0, 0)
		check("delete-b", 0, 0, 0)
		if left, _ := os.ReadDir(c.LocalDir); len(left) != 0 {
			t.Errorf("nproc %d: the tarballs were left in %s", tt.nproc, c.LocalDir)
		}

		// Each participant of a separate-directory phase has its share.
		for k := range tt.n {
			_, count := share(nfile, tt.n, k)
			check(filepath.Join("append-a", participantDir(k)), 0, count, int64(count*nbyte))
		}
	}
}

func TestRunCleanup(t *testing.T) {
	work := t.TempDir()
	c := Config{
		NFile: 20, NByte: 10, Freq: 5, NProc: 3, Cleanup: true,
		Dirs: []string{work}, Tree: GlibcTree().Scaled(1000), LocalDir: t.TempDir(),
	}
	if _, err := Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{work, c.LocalDir} {
		if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
			t.Errorf("-k left %v in %s (%v)", left, dir, err)
		}
	}
}

func TestRunSeparateVolumes(t *testing.T) {
	c := Config{NFile: 4, NByte: 1, Freq: 1, NProc: 2, Stat: true, Dirs: []string{t.TempDir(), t.TempDir()}}
	_, err := Run(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "same volume") {
		t.Errorf("two unrelated directories: error %v, want one saying they must be one volume", err)
	}
	if left, _ := os.ReadDir(c.Dirs[0]); len(left) != 0 {
		t.Errorf("the refused run left %v behind", left)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Config{NFile: 100, NByte: 1, Freq: 10, NProc: 2, Create: true, Dirs: []string{t.TempDir()}}
	if _, err := Run(ctx, c); err == nil {
		t.Error("a cancelled run succeeded")
	}
}
