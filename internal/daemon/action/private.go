package action

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// bindPrivate gives each of the job's compute nodes a file system of its
// own at its output directory (output=private): an equal share of the
// job's capacity each, its root with the output directory's group and
// mode, like a shared RAMDISK's.
func (e *Env) bindPrivate(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	pb, ok := e.Access.(access.PrivateBinder)
	if !ok {
		return fmt.Errorf("the compute nodes of engine %s cannot have output of their own; the job writes its output to disk (output=shared catches it in RAM)", e.Engine.Name())
	}
	fd, err := e.Policy.OpenTarget(string(access.OutputRole), j.Spec.Output, j.UID)
	if err != nil {
		return err
	}
	st, err := statClose(fd)
	if err != nil {
		return err
	}
	shares := int64(max(len(j.Hosts), 1))
	size := j.Capacity() / shares / (1 << 20) * (1 << 20)
	if size < 16<<20 {
		return fmt.Errorf("output=private: %s of RAM over %d compute nodes leaves each less than the 16M a file system of its own needs; ask for more capacity", units.FormatSize(j.Capacity()), shares)
	}
	if a, ok := engine.As[engine.ClientAdmitter](e.Engine); ok {
		if err := a.AdmitClients(ctx, rd, j.Hosts); err != nil {
			return err
		}
	}
	if err := pb.BindPrivate(ctx, j.Hosts, rd, j.Spec.Output, size, access.RootAttrs{UID: j.UID, GID: st.Gid, Mode: st.Mode & 0o7777}); err != nil {
		return err
	}
	where := "at the output directory"
	if shares > 1 {
		where = fmt.Sprintf("for each of the job's %d compute nodes at the output directory", shares)
	}
	e.note(j, fmt.Sprintf("mount: a file system of %s of its own %s (output=private)", units.FormatSize(size), where))
	return nil
}

// stageOutPrivate stages out the job's private output: every node's file
// system, once nothing holds it, is checked, mounted read-only and copied
// into the output directory as the job's user, verified.
//
// A part of the RAMDISK out of reach takes pieces of the file systems'
// images with it, and a client that has not yet reached a part back
// answers a lookup of an image there with "no such file": so each phase
// that looks for the images (the check, then the copy) is trusted only if
// every part was in reach, without a break, from before it to after it
// (the seal between them gives the client a new view of the RAMDISK, so
// each phase is checked on its own), and an image the check found must
// be there for the copy. Otherwise the stage-out fails naming the RSA
// nodes, and the images stay in RAM.
//
// A part lost with no copy while the compute nodes held their file
// systems (job.PrivateLost), or before they were checked, may have taken
// with it what a node wrote and never flushed: such images are never
// verified, and the stage-out fails for good (a *writesLostError, which
// the lifecycle records), leaving them in RAM for an administrator.
//
// A compute node's file system that could not carry all the job wrote
// into its image (its flush failed as it was unmounted, so the image is
// marked: access.UnbindPrivate) fails the stage-out for good in the same
// way.
//
// The same name from two nodes is an error that names both: nothing is
// copied, and every node's file system stays in RAM, where root can mount
// each, until an administrator discards them.
func (e *Env) stageOutPrivate(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	if j.PrivateLost {
		return &writesLostError{job: j.ID, nodes: j.Lost, image: access.PrivateImage(rd, "NODE")}
	}
	// What the job left running may hold its file systems open, and so
	// their loop devices: a file system still mounted is never checked.
	// They are pinned (engine.PinBeside) only until their holders are
	// gone, and let go before the check.
	if err := e.unbindAndEvict(ctx, j, rd, false); err != nil {
		return err
	}
	var checked []string
	err := e.inReach(ctx, j, rd, "nothing is copied while it is", func() (err error) {
		checked, err = access.PreparePrivate(ctx, rd, j.Hosts)
		return err
	})
	if lost := (*partsLostError)(nil); errors.As(err, &lost) {
		// The compute nodes' file systems were flushed as they were
		// unmounted, a moment ago, into a RAMDISK with a part gone.
		return &writesLostError{job: j.ID, nodes: lost.nodes, image: access.PrivateImage(rd, "NODE")}
	}
	if wl := (*access.WritebackLostError)(nil); errors.As(err, &wl) {
		return writebackLostError(j.ID, wl, access.PrivateImage(rd, "NODE"))
	}
	if err != nil {
		return err
	}
	// Read-only from now on: nothing writes the images while they are
	// copied, or after.
	if err := e.seal(ctx, j, rd, false); err != nil {
		return err
	}
	return e.inReach(ctx, j, rd, "what was copied before is on disk", func() error {
		return e.copyPrivate(ctx, j, rd, checked)
	})
}

// inReach runs phase, a part of a private stage-out, and fails unless
// every part of the RAMDISK was in reach from before phase to after it;
// copied says what is on disk when it fails so.
func (e *Env) inReach(ctx context.Context, j *job.Job, rd engine.Ramdisk, copied string, phase func() error) error {
	before, cerr := e.Engine.Check(ctx, rd)
	if cerr != nil {
		return fmt.Errorf("whether every part of the RAMDISK is in reach is unknown, and a file system with pieces missing is never copied: %w", cerr)
	}
	if before.Missing {
		return partsLost(j, before, "nothing is copied while it is", nil)
	}
	err := phase()
	if ctx.Err() != nil {
		return cmp.Or(err, ctx.Err())
	}
	after, cerr := e.Engine.Check(ctx, rd)
	switch {
	case cerr != nil && err != nil:
		return fmt.Errorf("%w; and whether every part of the RAMDISK was in reach is unknown: %v", err, cerr)
	case cerr != nil:
		return fmt.Errorf("whether every part of the RAMDISK was in reach is unknown: %w", cerr)
	case !before.Steady(after):
		return partsLost(j, before.Merge(after), copied, err)
	case err != nil:
		return err
	case len(before.Nodes) > 0:
		e.note(j, fmt.Sprintf("stage-out: RSA node %s out of reach; its replicas were used instead", strings.Join(before.Nodes, ", ")))
	}
	return nil
}

// partsLost is the failure of a private stage-out that met a part of the
// RAMDISK out of reach: copied says what is on disk, err is what the
// stage-out met, if anything.
func partsLost(j *job.Job, dg engine.Degraded, copied string, err error) error {
	why := "not verified: the part of the RAMDISK on RSA node " + strings.Join(dg.Nodes, ", ") +
		" was out of reach, and with it pieces of the compute nodes' file systems; " + copied +
		fmt.Sprintf(". 'rsa retry %d' stages them out if the node comes back with its RAM (a brick restarted, a cut link healed); if it rebooted they are gone, and 'rsa discard %d' gives them up", j.ID, j.ID)
	if err != nil {
		why += "; meanwhile: " + err.Error()
	}
	return &partsLostError{nodes: dg.Nodes, why: why}
}

// partsLostError: a phase of a private stage-out met the parts of the
// RAMDISK on nodes out of reach.
type partsLostError struct {
	nodes []string
	why   string
}

func (e *partsLostError) Error() string { return e.why }

// writesLostError: the private output's images may lack what the compute
// nodes wrote, for a part of the RAMDISK on nodes was lost while they
// held their file systems. It never passes: a retry meets it again.
type writesLostError struct {
	job   int64
	nodes []string
	image string
}

func (e *writesLostError) Error() string {
	return fmt.Sprintf("not verified, and never will be: the part of the RAMDISK on RSA node %s was lost while the compute nodes wrote their own file systems, whose images may lack what was written then, unseen; nothing is copied. The images stay in RAM as %s: root can mount one to save what it holds (mount -o loop,ro), and 'rsa discard %d' releases them",
		strings.Join(e.nodes, ", "), e.image, e.job)
}

// Nodes are the RSA nodes whose loss the lifecycle records.
func (e *writesLostError) Nodes() []string { return e.nodes }

// writebackLostError is the stage-out's failure, for good, when compute
// nodes' file systems could not carry all the job wrote into their images
// (marked so as they were unmounted: every retry fails the same way).
func writebackLostError(job int64, wl *access.WritebackLostError, image string) error {
	return fmt.Errorf("not verified, and never will be: not all that the job wrote into its own file system on %w reached that file system's image in RAM, which lacks it, unseen; nothing is copied. The usual cause: an RSA node's part of the RAMDISK filled before the file system did (an image's pieces are spread over the parts by hash), which more capacity or output=shared avoids. The images stay in RAM as %s: root can mount one to save what it holds (mount -o loop,ro), and 'rsa discard %d' releases them",
		wl, image, job)
}

// copyPrivate mounts the checked file systems read-only and copies them
// into the output directory as the job's user, verified; checked are the
// nodes whose image the check found, each of which must be there.
func (e *Env) copyPrivate(ctx context.Context, j *job.Job, rd engine.Ramdisk, checked []string) error {
	trees, release, err := access.PrivateTrees(rd, j.Hosts)
	defer func() {
		if rerr := release(); rerr != nil {
			e.Log.Warn("unmounting private output after its stage-out", "job", j.ID, "err", rerr)
		}
	}()
	if err != nil {
		return err
	}
	for _, n := range checked {
		if !slices.ContainsFunc(trees, func(t access.Tree) bool { return t.Node == n }) {
			return fmt.Errorf("the private output image of %s, checked a moment ago, cannot be found (%s): nothing of it was copied", n, access.PrivateImage(rd, n))
		}
	}
	if err := collisions(trees); err != nil {
		return fmt.Errorf("%w; nothing was copied, and each node's file system stays in RAM as %s (root can mount one: mount -o loop,ro) until an administrator runs 'rsa discard %d'",
			err, access.PrivateImage(rd, "NODE"), j.ID)
	}
	var all job.Progress
	for i, t := range trees {
		jj := *j
		jj.Ramdisk = t.Dir
		e.note(j, fmt.Sprintf("stage-out: the private output of %s", t.Node))
		// On this host, whatever the engine: the tree is mounted here.
		if err := e.stage(ctx, &jj, stage.StageOut, "", j.Spec.Output, false, true); err != nil {
			return fmt.Errorf("the private output of %s: %w", t.Node, err)
		}
		// Each tree's stage counts from zero; the job's stage-out is
		// all of them.
		p := e.Daemon.Progress(j.ID)
		if i == 0 {
			all = p
		} else {
			all.Files, all.Bytes, all.Updated = all.Files+p.Files, all.Bytes+p.Bytes, p.Updated
		}
	}
	e.Daemon.SetProgress(j.ID, all)
	return nil
}

// collisions reports the names (files, symlinks: anything but a
// directory) that more than one node's tree holds, each with the nodes:
// merged into one output directory, one would replace the other.
func collisions(trees []access.Tree) error {
	owner := map[string][]string{}
	for _, t := range trees {
		err := filepath.WalkDir(t.Dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(t.Dir, p)
			owner[rel] = append(owner[rel], t.Node)
			return nil
		})
		if err != nil {
			return fmt.Errorf("listing the private output of %s: %w", t.Node, err)
		}
	}
	var clash []string
	for rel, nodes := range owner {
		if len(nodes) > 1 {
			clash = append(clash, fmt.Sprintf("%s (from %s)", textsafe.Line(rel), strings.Join(nodes, " and ")))
		}
	}
	if len(clash) == 0 {
		return nil
	}
	slices.Sort(clash)
	more := ""
	if len(clash) > 5 {
		more = fmt.Sprintf(" and %d more", len(clash)-5)
		clash = clash[:5]
	}
	return errors.New("output=private: the same name written on more than one compute node, which one output directory cannot hold: " +
		strings.Join(clash, ", ") + more)
}
