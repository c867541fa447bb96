package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// nodeCmd is the daemon's hand inside a compute node's mount namespace
// (access.Namespaces starts it there through nsenter). It is not for people:
// it mounts what the daemon hands it, after the same race-free checks.
func nodeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "node", Hidden: true, Short: "mount work inside a compute node (run by rsa serve)",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if os.Geteuid() != 0 {
				return errors.New("rsa node runs as root, started by rsa serve")
			}
			return nil
		}}
	var role, target, refuse string
	var uid uint32
	var allowed []string
	attach := &cobra.Command{
		Use:   "attach --role ROLE --uid UID --target DIR",
		Short: "mount the RAMDISK tree passed as fd 3 over DIR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st unix.Stat_t
			if err := unix.Fstat(3, &st); err != nil {
				return fmt.Errorf("no RAMDISK tree on fd 3: %w", err)
			}
			pol := mount.Policy{AllowedPaths: allowed}
			if cmd.Flags().Changed("refuse-fs-types") {
				pol.RefuseFSTypes = []string{}
				if refuse != "" {
					pol.RefuseFSTypes = strings.Split(refuse, ",")
				}
			}
			return pol.Attach(role, 3, target, uid)
		},
	}
	attach.Flags().StringVar(&role, "role", "directory", "what the target is, for messages")
	attach.Flags().Uint32Var(&uid, "uid", 0, "the job's user, who must own the target")
	attach.Flags().StringVar(&target, "target", "", "the job's directory")
	attach.Flags().StringArrayVar(&allowed, "allowed-path", nil, "a tree targets must lie in (repeatable; none: any)")
	attach.Flags().StringVar(&refuse, "refuse-fs-types", "", "file system types never mounted over, comma-separated (default: RSA's list)")
	var dev string
	var force bool
	detach := &cobra.Command{
		Use:   "detach --dev MAJOR:MINOR [--force]",
		Short: "unmount every mount of the RAMDISK's file system here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := mount.UnbindDev(dev, "", force)
			if errors.Is(err, mount.ErrBusy) {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(access.ExitBusy)
			}
			return err
		},
	}
	detach.Flags().StringVar(&dev, "dev", "", "the RAMDISK's device number")
	detach.Flags().BoolVar(&force, "force", false, "detach busy mounts instead of failing")
	cmd.AddCommand(attach, detach)
	return cmd
}
