package holders

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"
)

// AwaitExit waits until the process pid, started at start (as StartTime
// gives it), exits, and says how it went: "exited", or "is gone" when it
// was gone before the wait began (a pid that names another process now is
// such a one). It returns "" when ctx ends first.
func AwaitExit(ctx context.Context, pid int, start uint64) string {
	if st, err := StartTime(pid); err != nil || st != start {
		return "is gone"
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return "is gone"
	}
	defer unix.Close(fd)
	for ctx.Err() == nil {
		// Polled a second at a time: a pidfd is readable once the
		// process has exited, and ctx is looked at between polls.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 1000)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return ""
		}
		if n > 0 {
			return "exited"
		}
	}
	return ""
}
