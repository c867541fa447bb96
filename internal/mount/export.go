package mount

// Unmount removes the one mount m, found in the mount table, by its ID:
// wherever it is now, without following any user symlink to it (see
// unmountID). A mount that has the ID by now but is not m (another
// device, type, source or root) is left alone. With detach a busy mount
// is detached, with whatever is mounted on or in it; without it, it fails
// wrapping ErrBusy. A mount already gone is no error.
func Unmount(m Info, detach bool) error { return unmountID(m.ID, m.identity(), detach) }
