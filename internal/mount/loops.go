package mount

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LoopsBelow lists the loop devices bound now whose backing file is below
// dir, as "loopN on FILE" (sysfs backing_file, as the kernel names the
// file).
func LoopsBelow(dir string) []string {
	var on []string
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // detached since the listing
		}
		if backing := strings.TrimSpace(string(b)); strings.HasPrefix(backing, dir+"/") {
			on = append(on, filepath.Base(filepath.Dir(filepath.Dir(f)))+" on "+backing)
		}
	}
	return on
}

// AwaitLoopsGone waits, polling, until no loop device is backed by a file
// below dir, or limit passes, or ctx ends; it reports whether there were
// some and none are left. A loop device bound with autoclear detaches
// after the last close of its device, which the kernel does
// asynchronously, and something else (udev's probe) may hold the device
// for a moment: until then its backing file, and the file system under
// it, are busy.
func AwaitLoopsGone(ctx context.Context, dir string, limit time.Duration) bool {
	if len(LoopsBelow(dir)) == 0 {
		return false
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
		if len(LoopsBelow(dir)) == 0 {
			return true
		}
	}
	return false
}
