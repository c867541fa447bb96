package mount

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The POSIX ACLs of a file, as the kernel keeps them in extended
// attributes: the access ACL, and a directory's default ACL that new
// files in it inherit. A file without either has its permission bits
// alone.
var aclXattrs = []string{"system.posix_acl_access", "system.posix_acl_default"}

// fdPath names the file open as fd, also an O_PATH one, for the calls
// that take no descriptor of that kind (getxattr, setxattr): the magic
// link leads to that very inode, whatever its path has become.
func fdPath(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

// HasACL reports whether the directory open as fd carries a POSIX ACL
// (access or default) beyond its permission bits.
func HasACL(fd int) (bool, error) {
	for _, name := range aclXattrs {
		_, err := unix.Getxattr(fdPath(fd), name, nil)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP):
		default:
			return false, fmt.Errorf("reading its ACL (%s): %w", name, err)
		}
	}
	return false, nil
}

// CopyACLs gives the file open as to the POSIX ACLs of the one open as
// from, and removes those from has not: to then admits exactly whom from
// admits, with its permission bits copied too (by the caller). A file
// system that holds no ACLs fails only if from has one.
func CopyACLs(from, to int) error {
	for _, name := range aclXattrs {
		v, err := getxattr(fdPath(from), name)
		switch {
		case err == nil:
			if err := unix.Setxattr(fdPath(to), name, v, 0); err != nil {
				return fmt.Errorf("setting the ACL %s: %w", name, err)
			}
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP):
			if err := unix.Removexattr(fdPath(to), name); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) {
				return fmt.Errorf("removing the ACL %s: %w", name, err)
			}
		default:
			return fmt.Errorf("reading the ACL %s: %w", name, err)
		}
	}
	return nil
}

// getxattr reads the whole value of an extended attribute.
func getxattr(path, name string) ([]byte, error) {
	for {
		n, err := unix.Getxattr(path, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		m, err := unix.Getxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // it grew between the two calls
		}
		if err != nil {
			return nil, err
		}
		return buf[:m], nil
	}
}
