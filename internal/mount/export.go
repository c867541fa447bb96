package mount

// Unmount removes the one mount m, found in the mount table, without
// following any user symlink to it (see unmountVerified). With detach a busy
// mount is detached; without it, it fails wrapping ErrBusy.
func Unmount(m Info, detach bool) error { return unmountVerified(m, detach) }
