package access

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gate"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// Private output (output=private): each compute node gets a file system of
// its own, an ext4 image in the root of a RootOnly RAMDISK, which that node
// alone mounts read-write at the job's output path. Its name and mount
// points are the node's: PrivateImage, and beside the RAMDISK's mount
// point, behind the gate that admits root alone, out-NODE (read-write,
// bound to the node) and ro-NODE (read-only, for the stage-out).

// localNode names this host's image when the job runs here (Access
// Local, no compute node names).
const localNode = "local"

// PrivateImage is the image of node's private output in rd.
func PrivateImage(rd engine.Ramdisk, node string) string {
	return filepath.Join(rd.Dir, "out-"+cmpNode(node)+".img")
}

func privatePoint(rd engine.Ramdisk, node string, readOnly bool) string {
	kind := "out-"
	if readOnly {
		kind = "ro-"
	}
	return filepath.Join(filepath.Dir(rd.Dir), kind+cmpNode(node))
}

func cmpNode(node string) string {
	if node == "" {
		return localNode
	}
	return node
}

// RootAttrs are what the root of each private file system carries: the
// output directory's group and mode, and the job's user as owner.
type RootAttrs struct {
	UID, GID uint32
	Mode     uint32
}

// PrivateBinder is an Access that can give each compute node of a job a
// file system of its own at the job's output path.
type PrivateBinder interface {
	// BindPrivate makes each node's image (once: size bytes, ext4, its
	// root as attrs says), mounts it read-write, nosuid and nodev, and
	// binds it over target on that node alone, after the checks Bind
	// makes of target. Like Bind for output, a node already mounted
	// stays so when a later one fails. Idempotent.
	BindPrivate(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, size int64, attrs RootAttrs) error
}

// MountPrivate makes node's image in rd and mounts it read-write at its
// point beside rd's mount on this host, unless mounted there already, and
// gives its root attrs. It returns the mount point, which the caller binds
// over the job's output directory on node.
func MountPrivate(ctx context.Context, rd engine.Ramdisk, node string, size int64, attrs RootAttrs) (string, error) {
	point := privatePoint(rd, node, false)
	if err := os.Mkdir(point, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("creating the mount point of %s's private output: %w", cmpNode(node), err)
	}
	if m, ok, err := mount.MountedAt(point); err != nil {
		return "", err
	} else if ok {
		if m.FSType != "ext4" {
			return "", fmt.Errorf("%s is a mount point of %s, not of the job's private output; leaving it for an administrator", point, m.FSType)
		}
		return point, nil
	}
	image := PrivateImage(rd, node)
	if err := mount.MakeExt4(ctx, image, size, attrs.UID, attrs.GID); err != nil {
		return "", err
	}
	if err := mount.MountExt4(image, point, false); err != nil {
		return "", err
	}
	// Through a descriptor opened without following symlinks: the root
	// is the user's, who must not steer root's chown elsewhere.
	fd, err := unix.Openat2(unix.AT_FDCWD, point, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err == nil {
		err = unix.Fchown(fd, int(attrs.UID), int(attrs.GID))
		if err == nil {
			err = unix.Fchmod(fd, attrs.Mode&0o7777)
		}
		if err == nil {
			err = tidyLostFound(fd, attrs.UID, attrs.GID)
		}
		unix.Close(fd)
	}
	if err != nil {
		return "", fmt.Errorf("setting the root of %s's private output: %w", cmpNode(node), err)
	}
	return point, nil
}

// tidyLostFound removes the lost+found directory of the file system whose
// root is open as root, or, if e2fsck put files there, gives it to the
// job's user: it is no output of the job's, and root's 0700 would stop
// the stage-out, which copies as the user.
func tidyLostFound(root int, uid, gid uint32) error {
	err := unix.Unlinkat(root, "lost+found", unix.AT_REMOVEDIR)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST):
		return unix.Fchownat(root, "lost+found", int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW)
	}
	return fmt.Errorf("removing lost+found: %w", err)
}

// privateMounts are the private output's mounts on this host (out-* and
// ro-* beside rd's mount point).
func privateMounts(rd engine.Ramdisk) ([]mount.Info, error) {
	ms, err := engine.BesideMounts(rd)
	if err != nil {
		return nil, err
	}
	var out []mount.Info
	for _, m := range ms {
		base := filepath.Base(m.Point)
		if m.FSType == "ext4" && (strings.HasPrefix(base, "out-") || strings.HasPrefix(base, "ro-")) {
			out = append(out, m)
		}
	}
	return out, nil
}

// UnbindPrivate removes the private output's file systems beside rd's
// mount on this host: each one's binds with unbind (given its mount
// point), then its own mount. Before a read-write one goes, it is flushed
// (syncfs) and the flush's verdict kept: a write the kernel could not
// carry into the image (its part of the RAMDISK full, or out of reach)
// fails only there, long after the job's write returned, and the image
// lacks it. Such an image is marked (writesLostXattr), so that no
// stage-out ever calls it verified (PreparePrivate); it is unmounted all
// the same, and kept.
//
// watch, if not nil, gives the descriptor held on a mount point since it
// was mounted (WatchPrivate), or nil: the flush's verdict through it
// covers every failure since the mount, even one the job saw itself
// (syncfs reports a failure once to each descriptor; a descriptor opened
// now learns only of failures no one has seen). UnbindPrivate closes it.
func UnbindPrivate(rd engine.Ramdisk, detach bool, unbind func(point string) error, watch func(point string) *os.File) error {
	ms, err := privateMounts(rd)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		var held *os.File
		if watch != nil {
			held = watch(m.Point)
		}
		if err := unbind(m.Point); err != nil {
			held.Close()
			errs = append(errs, fmt.Errorf("private output %s: %w", filepath.Base(m.Point), err))
			continue
		}
		if node, ok := strings.CutPrefix(filepath.Base(m.Point), "out-"); ok {
			if err := flushPrivate(m.Point, held); err != nil {
				// A mark that cannot be made means the image is out
				// of reach (its part of the RAMDISK lost), which a
				// stage-out refuses on its own, from the loss, or its
				// part is full, where the stage-out's e2fsck fails
				// (PreparePrivate); the file system goes all the
				// same, or it would hold the teardown for good.
				_ = markWritebackLost(rd, node, err)
			}
		} else {
			held.Close()
		}
		if err := mount.Unmount(m, detach); err != nil {
			errs = append(errs, fmt.Errorf("unmounting private output %s: %w", filepath.Base(m.Point), err))
		}
	}
	return errors.Join(errs...)
}

// WatchPrivate opens the private file system mounted at point, for
// UnbindPrivate's flush to learn through it of every write-back failure
// from now on. The caller holds it while the file system is mounted.
func WatchPrivate(point string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, point, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, fmt.Errorf("opening the private output at %s: %w", point, err)
	}
	return os.NewFile(uintptr(fd), point), nil
}

// flushPrivate flushes the file system at point through held (closed
// after), or through a descriptor opened now, and returns the write-back
// failure the kernel reports.
func flushPrivate(point string, held *os.File) error {
	f := held
	if f == nil {
		var err error
		if f, err = WatchPrivate(point); err != nil {
			return err
		}
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("flushing it into its image: %w", err)
	}
	return nil
}

// lastLines is the last n non-empty lines of s, joined by "; ".
func lastLines(s string, n int) string {
	var ls []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return strings.Join(ls[max(len(ls)-n, 0):], "; ")
}

// writesLostXattr marks an image that lost writes, with why: an extended
// attribute of the image itself, which no user may set, lives as long as
// the image and, on a full RAMDISK, needs no block a file would.
const writesLostXattr = "trusted.rsa.writes-lost"

// markWritebackLost records on node's image in rd why it lacks writes
// (cause).
func markWritebackLost(rd engine.Ramdisk, node string, cause error) error {
	if err := unix.Lsetxattr(PrivateImage(rd, node), writesLostXattr, []byte(cause.Error()), 0); err != nil {
		return fmt.Errorf("%v; marking its image so failed: %w", cause, err)
	}
	return nil
}

// WritebackLostError: the private file system of each of Nodes could not
// carry into its image all the job wrote (WritebackLost marks): the
// images lack it, unseen, and can never be verified.
type WritebackLostError struct {
	Nodes  []string
	Causes []string // per node, what the flush reported
}

func (e *WritebackLostError) Error() string {
	var b strings.Builder
	for i, n := range e.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "compute node %s (%s)", n, e.Causes[i])
	}
	return b.String()
}

// writebackLost reads the marks of nodes' images in rd.
func writebackLost(rd engine.Ramdisk, nodes []string) (*WritebackLostError, error) {
	var lost WritebackLostError
	buf := make([]byte, 1024)
	for _, node := range orLocal(nodes) {
		n, err := unix.Lgetxattr(PrivateImage(rd, node), writesLostXattr, buf)
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOENT) {
			continue
		}
		if errors.Is(err, unix.ERANGE) {
			n, err = len(buf), nil // a longer cause, cut
		}
		if err != nil {
			return nil, fmt.Errorf("reading the marks of %s's private output: %w", cmpNode(node), err)
		}
		lost.Nodes = append(lost.Nodes, cmpNode(node))
		lost.Causes = append(lost.Causes, textsafe.Line(string(buf[:n])))
	}
	if len(lost.Nodes) == 0 {
		return nil, nil
	}
	return &lost, nil
}

func (l Local) BindPrivate(ctx context.Context, _ []string, rd engine.Ramdisk, target string, size int64, attrs RootAttrs) error {
	point, err := MountPrivate(ctx, rd, "", size, attrs)
	if err != nil {
		return err
	}
	img := rd
	img.Dir = point
	return l.Bind(ctx, nil, OutputRole, img, target)
}

func (n Namespaces) BindPrivate(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, size int64, attrs RootAttrs) error {
	if len(nodes) == 0 {
		return errors.New("the job runs on no compute node yet")
	}
	for _, node := range nodes {
		point, err := MountPrivate(ctx, rd, node, size, attrs)
		if err != nil {
			return fmt.Errorf("on %s: %w", node, err)
		}
		img := rd
		img.Dir = point
		if err := n.Bind(ctx, []string{node}, OutputRole, img, target); err != nil {
			return err
		}
	}
	return nil
}

var (
	_ PrivateBinder = Local{}
	_ PrivateBinder = Namespaces{}
)

// Tree is one node's private output, mounted read-only for its stage-out.
type Tree struct {
	Node string
	Dir  string
}

// PreparePrivate checks the image of each of nodes that has one (e2fsck,
// fixing what it may) and tidies the lost+found e2fsck may have made, so
// that the image can be mounted read-only for its stage-out; it leaves
// nothing mounted, and returns the nodes (as Tree names them) whose image
// it found. Call it once nothing holds the images any more (Unbind, and
// the job's processes ended). On a RAMDISK already read-only, sealed after
// its images were checked (a stage-out tried again), it only finds them:
// nothing may write them now. An image marked as lacking writes
// (UnbindPrivate) fails it with a *WritebackLostError before anything is
// done; so does, marking it, an image e2fsck finds errors in that it
// cannot correct.
func PreparePrivate(ctx context.Context, rd engine.Ramdisk, nodes []string) ([]string, error) {
	switch lost, err := writebackLost(rd, nodes); {
	case err != nil:
		return nil, err
	case lost != nil:
		return nil, lost
	}
	var sfs unix.Statfs_t
	sealed := unix.Statfs(rd.Dir, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
	var found []string
	for _, node := range orLocal(nodes) {
		image := PrivateImage(rd, node)
		if _, err := os.Lstat(image); errors.Is(err, os.ErrNotExist) {
			continue // never mounted there: nothing written
		} else if err != nil {
			return found, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
		}
		found = append(found, cmpNode(node))
		if sealed {
			continue
		}
		point := privatePoint(rd, node, true)
		if err := os.Mkdir(point, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return found, err
		}
		if m, ok, err := mount.MountedAt(point); err != nil {
			return found, err
		} else if ok {
			if err := mount.Unmount(m, false); err != nil { // an earlier try's
				return found, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
			}
		}
		if err := mount.CheckExt4(ctx, image); err != nil {
			// An image e2fsck cannot make whole lacks what the job
			// wrote (a write-back failure its flush did not learn
			// of, or a part of the RAMDISK full, which also keeps
			// e2fsck from writing its fixes): never verified.
			// Marked, so that a later try, once e2fsck could fix
			// it, never copies what is left as the job's output.
			//
			// A part too full for the mark too (an extended
			// attribute needs room on the brick) fails the same,
			// saying so: a later try meets the same full part and
			// e2fsck fails again, unless the part was emptied since.
			if ce := (*mount.CheckError)(nil); errors.As(err, &ce) && ce.Uncorrected() {
				cause := fmt.Errorf("its image failed its check: %s", lastLines(ce.Output, 5))
				if merr := markWritebackLost(rd, node, cause); merr != nil {
					cause = merr
				}
				return found, &WritebackLostError{Nodes: []string{cmpNode(node)}, Causes: []string{textsafe.Line(cause.Error())}}
			}
			return found, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
		}
		if err := mount.MountExt4(image, point, false); err != nil {
			return found, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
		}
		fd, err := unix.Openat2(unix.AT_FDCWD, point, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err == nil {
			err = tidyLostFound(fd, rd.UID, rd.GID)
			unix.Close(fd)
		}
		m, ok, merr := mount.MountedAt(point)
		if merr == nil && ok {
			merr = mount.Unmount(m, false)
		}
		if err = errors.Join(err, merr); err != nil {
			return found, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
		}
	}
	return found, nil
}

// PrivateTrees mounts the prepared image of each of nodes that has one
// read-only, nosuid, nodev and noexec, for the stage-out, and lets the
// job's user pass the gate to them; release unmounts them.
func PrivateTrees(rd engine.Ramdisk, nodes []string) (trees []Tree, release func() error, err error) {
	release = func() error {
		var errs []error
		for _, t := range trees {
			if m, ok, err := mount.MountedAt(t.Dir); err == nil && ok {
				errs = append(errs, mount.Unmount(m, true))
			}
		}
		return errors.Join(errs...)
	}
	for _, node := range orLocal(nodes) {
		image := PrivateImage(rd, node)
		if _, err := os.Lstat(image); errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return trees, release, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
		}
		point := privatePoint(rd, node, true)
		if _, ok, err := mount.MountedAt(point); err != nil {
			return trees, release, err
		} else if !ok {
			if err := mount.MountExt4(image, point, true); err != nil {
				return trees, release, fmt.Errorf("%s's private output: %w", cmpNode(node), err)
			}
		}
		trees = append(trees, Tree{Node: cmpNode(node), Dir: point})
	}
	// The copy runs as the job's user, who must pass the gate to reach
	// the read-only trees; the RAMDISK holding the images stays root's
	// alone (its root is 0700), and the teardown closes the gate again.
	if err := gate.Open(filepath.Dir(rd.Dir), rd.UID); err != nil {
		return trees, release, err
	}
	return trees, release, nil
}

// orLocal is nodes, or this host's one name when the job runs here.
func orLocal(nodes []string) []string {
	if len(nodes) == 0 {
		return []string{""}
	}
	return nodes
}
