package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/node"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// bindPrivate gives each of the job's compute nodes a file system of its
// own at its output directory (output=private): an equal share of the
// job's capacity each, its root with the output directory's group and
// mode, like a shared RAMDISK's.
func (d *Daemon) bindPrivate(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	pb, ok := d.access.(node.PrivateBinder)
	if !ok {
		return fmt.Errorf("the compute nodes of engine %s cannot have output of their own; the job writes its output to disk (output=shared catches it in RAM)", d.engine.Name())
	}
	fd, err := d.policy.OpenTarget(node.OutputRole, j.Spec.Output, j.UID)
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
	if a, ok := engine.As[engine.ClientAdmitter](d.engine); ok {
		if err := a.AdmitClients(ctx, rd, j.Hosts); err != nil {
			return err
		}
	}
	if err := pb.BindPrivate(ctx, j.Hosts, rd, j.Spec.Output, size, node.RootAttrs{UID: j.UID, GID: st.Gid, Mode: st.Mode & 0o7777}); err != nil {
		return err
	}
	where := "at the output directory"
	if shares > 1 {
		where = fmt.Sprintf("for each of the job's %d compute nodes at the output directory", shares)
	}
	d.appendStageLog(j, fmt.Sprintf("mount: a file system of %s of its own %s (output=private)", units.FormatSize(size), where))
	return nil
}

// stageOutPrivate stages out the job's private output: every node's file
// system, once nothing holds it, is checked, mounted read-only and copied
// into the output directory as the job's user, verified. The same name
// from two nodes is an error that names both: nothing is copied, and
// every node's file system stays in RAM, where root can mount each, until
// an administrator discards them.
func (d *Daemon) stageOutPrivate(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	held := engine.BesideDevices(rd)
	if err := d.access.Unbind(ctx, j.Hosts, rd, true); err != nil {
		return err
	}
	// What the job left running may hold its file systems open, and so
	// their loop devices: a file system still mounted is never checked.
	if err := d.evict(ctx, j, rd, held...); err != nil {
		return err
	}
	if err := node.PreparePrivate(ctx, rd, j.Hosts); err != nil {
		return err
	}
	// Read-only from now on: nothing writes the images while they are
	// copied, or after.
	if err := d.seal(ctx, j, rd); err != nil {
		return err
	}
	trees, release, err := node.PrivateTrees(rd, j.Hosts)
	defer func() {
		if rerr := release(); rerr != nil {
			d.log.Warn("unmounting private output after its stage-out", "job", j.ID, "err", rerr)
		}
	}()
	if err != nil {
		return err
	}
	if err := collisions(trees); err != nil {
		return fmt.Errorf("%w; nothing was copied, and each node's file system stays in RAM as %s (root can mount one: mount -o loop,ro) until an administrator runs 'rsa discard %d'",
			err, node.PrivateImage(rd, "NODE"), j.ID)
	}
	for _, t := range trees {
		jj := *j
		jj.Ramdisk = t.Dir
		d.appendStageLog(j, fmt.Sprintf("stage-out: the private output of %s", t.Node))
		// On this host, whatever the engine: the tree is mounted here.
		if err := d.stageOn(ctx, &jj, "stage-out", "", j.Spec.Output, false, true); err != nil {
			return fmt.Errorf("the private output of %s: %w", t.Node, err)
		}
	}
	return nil
}

// collisions reports the names (files, symlinks: anything but a
// directory) that more than one node's tree holds, each with the nodes:
// merged into one output directory, one would replace the other.
func collisions(trees []node.Tree) error {
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
