package metabench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Report is a finished run: its configuration and one result a phase.
type Report struct {
	Config  Config // as run, defaults filled in
	Start   time.Time
	Results []Result
	Checks  []Check // with Config.CrossCheck: one a phase, in the same order
}

// N is the number of participants.
func (r *Report) N() int { return r.Config.Participants() }

// Run runs the phases c asks for, in order. All work happens under one new
// directory of the working directories (metabench-*), which -k removes.
func Run(ctx context.Context, c Config) (*Report, error) {
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("metabench: %w", err)
	}
	rep := &Report{Config: c, Start: time.Now()}

	top, err := os.MkdirTemp(c.Dirs[0], "metabench-")
	if err != nil {
		return nil, fmt.Errorf("metabench: %w", err)
	}
	r := &runner{c: c, run: filepath.Base(top), n: c.Participants()}
	if err := r.checkClients(); err != nil {
		os.Remove(top) // still empty: nothing has run
		return nil, fmt.Errorf("metabench: %w", err)
	}

	phases := c.Phases()
	if slices.Contains(phases, Untar) {
		cleanup, err := r.prepareTarballs()
		if err != nil {
			return nil, fmt.Errorf("metabench: Untar's tarball: %w", err)
		}
		defer cleanup()
	}

	for _, p := range phases {
		res, err := r.phase(ctx, p)
		res.Phase = p
		if err != nil {
			return rep, fmt.Errorf("metabench: %s: %w", p, err)
		}
		rep.Results = append(rep.Results, res)
		if c.Cleanup {
			// Process 0 cleans up, untimed, as the source's -k does.
			if err := os.RemoveAll(r.setupPath(phaseDir(p))); err != nil {
				return rep, fmt.Errorf("metabench: %s: clean up: %w", p, err)
			}
		}
	}
	if c.CrossCheck {
		// After every phase, so that no METABENCH phase runs beside the
		// other tools' files or in caches they warmed.
		if err := r.crossChecks(ctx, rep); err != nil {
			return rep, fmt.Errorf("metabench: %w", err)
		}
	}
	if c.Cleanup {
		if err := os.Remove(top); err != nil {
			return rep, fmt.Errorf("metabench: clean up: %w", err)
		}
	}
	return rep, nil
}

// runner holds what every phase of one run needs.
type runner struct {
	c        Config
	run      string   // the run's directory name, the same under every Dirs entry
	n        int      // participants
	tarballs []string // Untar's archive for each client (Dirs index)
}

// path is rel in the run's directory as process rank reaches it.
func (r *runner) path(rank int, rel ...string) string {
	return filepath.Join(append([]string{r.c.workDir(rank), r.run}, rel...)...)
}

// setupPath is rel as process 0, which sets up, reaches it.
func (r *runner) setupPath(rel ...string) string { return r.path(0, rel...) }

// checkClients makes sure every working directory shows the run directory
// process 0 just made: separate mounts must be of one volume.
func (r *runner) checkClients() error {
	for _, d := range r.c.Dirs[1:] {
		fi, err := os.Stat(filepath.Join(d, r.run))
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return fmt.Errorf("-w %s does not show %s, which process 0 made through %s: every working directory must be a mount of the same volume: %w",
				d, r.run, r.c.Dirs[0], err)
		}
	}
	return nil
}

// prepareTarballs puts Untar's archive in every client's local directory,
// the source's /tmp: the user's, or the synthetic tree written once and
// copied. It returns what removes the copies.
func (r *runner) prepareTarballs() (cleanup func(), err error) {
	clients := min(len(r.c.Dirs), r.c.NProc)
	r.tarballs = make([]string, clients)
	if r.c.Tarball != "" {
		for i := range r.tarballs {
			r.tarballs[i] = r.c.Tarball
		}
		return func() {}, nil
	}
	local, err := os.MkdirTemp(r.c.LocalDir, "metabench-tar-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(local) }
	for i := range r.tarballs {
		r.tarballs[i] = filepath.Join(local, fmt.Sprintf("client%d-glibc-2.3-synthetic.tar", i))
		if i == 0 {
			err = r.c.Tree.writeTarFile(r.tarballs[0])
		} else {
			err = copyFile(r.tarballs[i], r.tarballs[0])
		}
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	return cleanup, nil
}

// crossChecks runs each phase's counterpart, and mdtest when asked, and
// adds them to rep: mdtest is the check of the phases it has a rate for.
func (r *runner) crossChecks(ctx context.Context, rep *Report) error {
	var mdtest map[Phase]Check
	if r.c.Mdtest != "" {
		phases := make([]Phase, len(rep.Results))
		for i, res := range rep.Results {
			phases[i] = res.Phase
		}
		var err error
		if mdtest, err = r.mdtestChecks(ctx, phases); err != nil {
			return fmt.Errorf("cross-check: %w", err)
		}
	}
	for _, res := range rep.Results {
		chk, err := r.crossCheck(ctx, res.Phase, res)
		if err != nil {
			return fmt.Errorf("%s cross-check: %w", res.Phase, err)
		}
		if md, ok := mdtest[res.Phase]; ok {
			chk = preferMdtest(md, chk)
		}
		if chk.Tool != "" && chk.Ops != res.Ops && res.Phase != Untar {
			chk.Note = joinNotes(chk.Note, fmt.Sprintf("%d operations, METABENCH %d", chk.Ops, res.Ops))
		}
		rep.Checks = append(rep.Checks, chk)
		if r.c.Cleanup {
			if err := os.RemoveAll(r.setupPath(checkDir, phaseDir(res.Phase))); err != nil {
				return fmt.Errorf("%s cross-check: clean up: %w", res.Phase, err)
			}
		}
	}
	if r.c.Cleanup {
		if err := os.RemoveAll(r.setupPath(checkDir)); err != nil {
			return fmt.Errorf("cross-check: clean up: %w", err)
		}
	}
	return nil
}
