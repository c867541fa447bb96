package gluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// MountArgs are the arguments of mount(8) that mount volume from servers
// at dir, nosuid and nodev: the first server gives the client the volume's
// layout, the others stand in for it (backup-volfile-servers) if it is
// down when the client starts; after that the client talks to every brick
// itself.
func MountArgs(servers []string, volume, dir string) ([]string, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("mounting volume %s: no servers", volume)
	}
	for _, s := range servers {
		if err := CheckHost(s); err != nil {
			return nil, fmt.Errorf("mounting volume %s: server %w", volume, err)
		}
	}
	if err := CheckName(volume); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return nil, fmt.Errorf("mounting volume %s: %q is not a clean absolute path below /", volume, dir)
	}
	opts := "nosuid,nodev"
	if len(servers) > 1 {
		opts += ",backup-volfile-servers=" + strings.Join(servers[1:], ":")
	}
	return []string{"-t", "glusterfs", "-o", opts, servers[0] + ":/" + volume, dir}, nil
}

// Mount mounts volume from servers at dir with the Gluster FUSE client
// (mount -t glusterfs), nosuid and nodev: a mount that turns out otherwise
// is unmounted again and refused. The client process runs on after Mount
// returns, until the volume is unmounted. The client talks TLS to glusterd
// and the bricks: the host's Gluster TLS files must be installed
// (InstallTLS).
func Mount(ctx context.Context, servers []string, volume, dir string) error {
	args, err := MountArgs(servers, volume, dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mount", args...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
			return fmt.Errorf("mount %s: %w", strings.Join(args, " "), err)
		}
		return fmt.Errorf("mount %s: %s (%v); is the volume started, glusterfs-client installed, and this host in the volume's auth.allow? The client's log is /var/log/glusterfs/%s.log",
			strings.Join(args, " "), strings.TrimSpace(out.String()), err, strings.ReplaceAll(strings.TrimPrefix(dir, "/"), "/", "-"))
	}
	m, ok, err := mount.MountedAt(dir)
	switch {
	case err != nil:
		err = fmt.Errorf("reading the mount table: %w", err)
	case !ok:
		err = errors.New("nothing is mounted there afterwards")
	case !m.Unprivileged():
		err = fmt.Errorf("the mount has attributes %#x, not nosuid and nodev", m.Attr)
	}
	if err != nil {
		_ = Unmount(dir, true)
		return fmt.Errorf("mounting volume %s at %s: %w; refused", volume, dir, err)
	}
	return nil
}

// Unmount unmounts the file system at dir, without following a symbolic
// link there; lazy detaches it while a process still uses it. Nothing
// mounted at dir is no error.
func Unmount(dir string, lazy bool) error {
	flags := unix.UMOUNT_NOFOLLOW
	if lazy {
		flags |= unix.MNT_DETACH
	}
	err := unix.Unmount(dir, flags)
	switch {
	case err == nil, errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("unmounting %s: a process still uses it (unmount it lazily to detach it anyway): %w", dir, err)
	}
	return fmt.Errorf("unmounting %s: %w", dir, err)
}
