package erofs

import (
	"errors"
	"fmt"
	"strings"
)

// inode is one file of the image as held in memory until the metadata is
// written: everything but regular files' contents, which are already in
// their blocks. Its size is what bounds FromTar's memory per entry.
type inode struct {
	mode      uint16 // type and permission bits, as i_mode
	uid, gid  uint32
	mtime     int64
	mtimeNsec uint32
	nlink     uint32
	size      uint64 // data bytes: the file, the symlink target, or the directory's dirent blocks
	blkaddr   uint32 // first data block of a regular file (or, after layout, of a directory or long symlink)
	target    string // symlink target
	xattrs    []byte // encoded inline xattr entries (user.* only), without the ibody header

	// Directories only.
	children map[string]*inode // while the stream is read; nil afterwards
	entries  []dirent          // sorted, "." and ".." included; set by layout
	parent   *inode
	implicit bool // made for a child's path, not given in the stream (yet)

	// Set by layout.
	nid      uint64
	placed   bool
	extended bool
	inline   bool // FLAT_INLINE: the data's last partial block follows the inode
}

// dirent is one name in a directory.
type dirent struct {
	name  string
	inode *inode
}

func (n *inode) isDir() bool     { return n.mode&modeTypeMask == modeDir }
func (n *inode) isRegular() bool { return n.mode&modeTypeMask == modeRegular }
func (n *inode) isSymlink() bool { return n.mode&modeTypeMask == modeSymlink }

func (n *inode) fileType() uint8 {
	switch n.mode & modeTypeMask {
	case modeDir:
		return ftDir
	case modeRegular:
		return ftRegular
	case modeSymlink:
		return ftSymlink
	}
	return ftUnknown
}

// ErrInvalidEntry marks a tar entry the image cannot or must not hold: a
// bad name, a duplicate, a hard link to nothing, a device node.
var ErrInvalidEntry = errors.New("invalid tar entry")

// splitPath checks a tar member name and returns its components, nil for
// the root. It accepts the forms tar writers produce ("a/b", "./a/b",
// "a/b/" for a directory, "./" for the root) and refuses everything that
// could name something outside the tree or two different things: absolute
// names, "." or ".." inside the path, empty components, NUL bytes, and
// components longer than the format's 255 bytes.
func splitPath(name string) ([]string, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty name", ErrInvalidEntry)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("%w: name contains a NUL byte", ErrInvalidEntry)
	}
	if name[0] == '/' {
		return nil, fmt.Errorf("%w: absolute name", ErrInvalidEntry)
	}
	rel := strings.TrimPrefix(name, "./")
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" || rel == "." {
		return nil, nil
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		switch {
		case p == "..":
			return nil, fmt.Errorf("%w: name climbs out with '..'", ErrInvalidEntry)
		case p == "" || p == ".":
			return nil, fmt.Errorf("%w: name is not a clean relative path (empty or '.' component)", ErrInvalidEntry)
		case len(p) > maxNameLen:
			return nil, fmt.Errorf("%w: a component is %d bytes, over the format's %d", ErrInvalidEntry, len(p), maxNameLen)
		}
	}
	return parts, nil
}

// tree is the image's namespace while the stream is read.
type tree struct {
	root *inode
	// rootOwned: the implicit root has taken its owner and mtime from
	// the first entry.
	rootOwned bool
	entries   int // names in the tree, the root excluded
	depth     int // the deepest path's component count
	// lastDir caches the directory of the previous entry: tar streams
	// list a directory's members together, so most lookups hit it.
	lastDirPath string
	lastDir     *inode
}

func newTree() *tree {
	root := &inode{mode: modeDir | 0o755, nlink: 2, children: map[string]*inode{}, implicit: true}
	root.parent = root
	return &tree{root: root}
}

// parentOf returns the directory that holds parts' last component,
// making missing directories on the way with the attributes of like (the
// entry being added): an implicit directory is the entry owner's, mode
// 0755, with the entry's mtime.
func (t *tree) parentOf(parts []string, like *inode) (*inode, error) {
	dirPath := strings.Join(parts[:len(parts)-1], "/")
	if t.lastDir != nil && dirPath == t.lastDirPath {
		return t.lastDir, nil
	}
	dir := t.root
	for i, p := range parts[:len(parts)-1] {
		c, ok := dir.children[p]
		if !ok {
			c = &inode{
				mode: modeDir | 0o755, uid: like.uid, gid: like.gid,
				mtime: like.mtime, mtimeNsec: like.mtimeNsec,
				nlink: 2, children: map[string]*inode{}, parent: dir, implicit: true,
			}
			dir.children[p] = c
			dir.nlink++
			t.entries++
		} else if !c.isDir() {
			return nil, fmt.Errorf("%w: %q is not a directory", ErrInvalidEntry, strings.Join(parts[:i+1], "/"))
		}
		dir = c
	}
	t.lastDirPath, t.lastDir = dirPath, dir
	return dir, nil
}

// lookup returns the inode at parts, or nil.
func (t *tree) lookup(parts []string) *inode {
	n := t.root
	for _, p := range parts {
		if n.children == nil {
			return nil
		}
		c, ok := n.children[p]
		if !ok {
			return nil
		}
		n = c
	}
	return n
}

// add puts n at parts. A name already present is an error, except that a
// directory entry may give the attributes of a directory made implicitly
// for an earlier child (and the root's, once).
func (t *tree) add(parts []string, n *inode) error {
	if len(parts) == 0 {
		if !n.isDir() {
			return fmt.Errorf("%w: the root must be a directory", ErrInvalidEntry)
		}
		return t.fillImplicit(t.root, n)
	}
	t.ownRoot(n)
	dir, err := t.parentOf(parts, n)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	if old, ok := dir.children[name]; ok {
		if n.isDir() && old.isDir() {
			return t.fillImplicit(old, n)
		}
		return fmt.Errorf("%w: duplicate name", ErrInvalidEntry)
	}
	if n.isDir() {
		n.nlink = 2
		n.children = map[string]*inode{}
		n.parent = dir
		dir.nlink++
	}
	dir.children[name] = n
	t.entries++
	t.depth = max(t.depth, len(parts))
	return nil
}

// addLink puts the existing regular file at target under the name parts
// too, as a hard link.
func (t *tree) addLink(parts, target []string) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: a hard link cannot be the root", ErrInvalidEntry)
	}
	n := t.lookup(target)
	switch {
	case n == nil:
		return fmt.Errorf("%w: hard link to %q, which is not earlier in the stream", ErrInvalidEntry, strings.Join(target, "/"))
	case !n.isRegular():
		return fmt.Errorf("%w: hard link to %q, which is not a regular file", ErrInvalidEntry, strings.Join(target, "/"))
	case n.nlink == 1<<32-1:
		return fmt.Errorf("%w: too many hard links to %q", ErrInvalidEntry, strings.Join(target, "/"))
	}
	dir, err := t.parentOf(parts, n)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	if _, ok := dir.children[name]; ok {
		return fmt.Errorf("%w: duplicate name", ErrInvalidEntry)
	}
	dir.children[name] = n
	n.nlink++
	t.entries++
	t.depth = max(t.depth, len(parts))
	return nil
}

// ownRoot gives a root not given in the stream the owner and mtime of the
// first entry, as parentOf does for other missing directories.
func (t *tree) ownRoot(like *inode) {
	if t.rootOwned || !t.root.implicit {
		return
	}
	t.rootOwned = true
	t.root.uid, t.root.gid = like.uid, like.gid
	t.root.mtime, t.root.mtimeNsec = like.mtime, like.mtimeNsec
}

// fillImplicit gives an implicitly made directory the attributes of its
// own entry, which may come only once.
func (t *tree) fillImplicit(dir, n *inode) error {
	if !dir.implicit {
		return fmt.Errorf("%w: duplicate name", ErrInvalidEntry)
	}
	dir.mode, dir.uid, dir.gid = n.mode, n.uid, n.gid
	dir.mtime, dir.mtimeNsec = n.mtime, n.mtimeNsec
	dir.xattrs = n.xattrs
	dir.implicit = false
	return nil
}
