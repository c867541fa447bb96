package mount

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMountinfo(t *testing.T) {
	long := "/" + strings.Repeat("d", 300)
	for _, c := range []struct {
		name    string
		line    string
		lim     mountinfoLimits
		want    statmount
		wantErr string
	}{
		{
			name: "plain",
			line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
			want: statmount{id: 36, parent: 35, oldID: 36, devMajor: 98, root: "/mnt1", point: "/mnt2",
				hasPoint: true, fsType: "ext3", source: "/dev/root", attr: unix.MOUNT_ATTR_NOATIME,
				superOptions: "rw,errors=continue"},
		},
		{
			name: "no optional fields, escapes, a FUSE subtype, nosuid and nodev",
			line: "120 25 0:52 / /home/u/my\\040dir\\134x rw,nosuid,nodev,relatime - fuse.sshfs u@h:/a\\040b rw,user_id=1000\n",
			want: statmount{id: 120, parent: 25, oldID: 120, devMinor: 52, root: "/", point: `/home/u/my dir\x`,
				hasPoint: true, fsType: "fuse", subtype: "sshfs", source: "u@h:/a b",
				attr: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, superOptions: "rw,user_id=1000"},
		},
		{
			name: "several optional fields, read-only, no newline at the end",
			line: "7 1 0:30 / /run/rsa/ramdisk/j1 ro,nosuid,nodev shared:5 master:2 propagate_from:1 - tmpfs rsa-j1 rw,size=1024k",
			want: statmount{id: 7, parent: 1, oldID: 7, devMinor: 30, root: "/", point: "/run/rsa/ramdisk/j1",
				hasPoint: true, fsType: "tmpfs", source: "rsa-j1",
				attr: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, superOptions: "rw,size=1024k"},
		},
		{
			name: "a mount point longer than kept is cut, the rest of the line still read",
			line: "9 1 0:31 / " + long + " rw - tmpfs rsa-j2 rw\n",
			lim:  mountinfoLimits{point: 50, strings: 1 << 10},
			want: statmount{id: 9, parent: 1, oldID: 9, devMinor: 31, root: "/", point: long[:200],
				hasPoint: true, pointCut: true, fsType: "tmpfs", source: "rsa-j2", superOptions: "rw"},
		},
		{
			name: "only another mount's point is kept: this one's is cut",
			line: "9 1 0:31 / /run/rsa/x rw - tmpfs rsa-j2 rw\n",
			lim:  mountinfoLimits{point: 100, strings: 1 << 10, only: 10},
			want: statmount{id: 9, parent: 1, oldID: 9, devMinor: 31, root: "/", point: "",
				hasPoint: true, pointCut: true, fsType: "tmpfs", source: "rsa-j2", superOptions: "rw"},
		},
		{name: "no separator", line: "9 1 0:31 / /x rw tmpfs rsa-j2 rw\n", wantErr: "separator"},
		{name: "not a device", line: "9 1 031 / /x rw - tmpfs s rw\n", wantErr: "major:minor"},
		{name: "cut short", line: "9 1 0:31 / /x\n", wantErr: "ends early"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim := c.lim
			if lim.point == 0 {
				lim = mountinfoLimits{point: 1 << 10, strings: 1 << 10}
			}
			byID, ids, err := parseMountinfo(bufio.NewReader(strings.NewReader(c.line)), lim)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 {
				t.Fatalf("ids %v, want one", ids)
			}
			got := byID[ids[0]]
			got.mask = 0
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestMountinfoMatchesStatmount reads this machine's mount table both
// ways: every mount statmount reports, mountinfo reports the same. On a
// kernel without listmount (before 6.8) it checks instead that the
// mountinfo table is what RSA uses there.
func TestMountinfoMatchesStatmount(t *testing.T) {
	if os.Getenv(MountTableEnv) == "mountinfo" && Table() != Mountinfo {
		t.Fatalf("%s=mountinfo, and yet the mount table is read with %v", MountTableEnv, Table())
	}
	table, _, err := readMountinfo(mountinfoLimits{point: maxListPointLen, strings: maxStringsLen})
	if err != nil {
		t.Fatal(err)
	}
	unique, err := listMounts()
	if errors.Is(err, unix.ENOSYS) {
		if Table() != Mountinfo {
			t.Fatalf("listmount is missing, and yet the mount table is read with %v", Table())
		}
		if len(table) < 2 {
			t.Fatalf("mountinfo lists %d mounts; / and /proc at least are mounted", len(table))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	s := statmounter{}
	compared := 0
	for _, id := range unique {
		sm, err := s.statRaw(id, statmountInfo|statmountMntPoint, maxListPointLen+maxStringsLen)
		if err != nil {
			continue // gone meanwhile, or too long
		}
		mi, ok := table[uint64(sm.oldID)]
		if !ok {
			t.Errorf("mount %d (%s at %s) is not in mountinfo", sm.oldID, sm.fullType(), sm.point)
			continue
		}
		compared++
		const attrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
		if sm.dev() != mi.dev() || sm.fullType() != mi.fullType() || sm.point != mi.point || sm.root != mi.root ||
			sm.attr&attrs != mi.attr&attrs || (sm.mask&statmountSBSource != 0 && sm.source != mi.source) {
			t.Errorf("mount %d differs:\nstatmount %s %s %q %q %q attr %#x\nmountinfo %s %s %q %q %q attr %#x", sm.oldID,
				sm.dev(), sm.fullType(), sm.source, sm.root, sm.point, sm.attr&attrs,
				mi.dev(), mi.fullType(), mi.source, mi.root, mi.point, mi.attr&attrs)
		}
	}
	if compared < 2 {
		t.Fatalf("compared %d mounts; / and /proc at least are mounted", compared)
	}
}

// TestFdinfoMountID: fdinfo's mount ID, read where statx fails (a FUSE
// file system its server broke), is the one statx gives.
func TestFdinfoMountID(t *testing.T) {
	fd, err := unix.Open("/proc", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, 0, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		t.Fatalf("statx: %v, mask %#x", err, stx.Mask)
	}
	got, err := fdinfoMountID(fd)
	if err != nil || got != stx.Mnt_id {
		t.Fatalf("fdinfo says mount %d (%v), statx %d", got, err, stx.Mnt_id)
	}
}
