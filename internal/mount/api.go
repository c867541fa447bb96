package mount

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TableAPI is how RSA reads the mount table.
type TableAPI int

const (
	// Statmount: listmount(2) and statmount(2), Linux 6.8 and later.
	// Mount IDs are 64-bit and never reused.
	Statmount TableAPI = iota
	// Mountinfo: /proc/thread-self/mountinfo, read as a stream, on older
	// kernels (Debian 12's 6.1, RHEL 9's 5.14). Mount IDs are the kernel's
	// 32-bit ones, reused once their mount is gone, so each is checked
	// together with its mount's identity before RSA acts on it.
	Mountinfo
)

func (a TableAPI) String() string {
	if a == Mountinfo {
		return "/proc/self/mountinfo (the kernel has no listmount, Linux 6.8)"
	}
	return "listmount and statmount"
}

// MountTableEnv, set to "mountinfo", makes RSA read /proc/self/mountinfo
// even where the kernel has listmount: the tests of the older kernels'
// path run on a new kernel with it.
const MountTableEnv = "RSA_MOUNT_TABLE"

// Table says how this process reads the mount table. It is found once: a
// running kernel does not gain or lose system calls.
func Table() TableAPI { return tableAPI() }

var tableAPI = sync.OnceValue(func() TableAPI {
	if os.Getenv(MountTableEnv) == "mountinfo" {
		return Mountinfo
	}
	var id uint64
	req := mntIDReq{Size: unix.MNT_ID_REQ_SIZE_VER0, MntID: lsmtRoot}
	_, _, errno := unix.Syscall6(unix.SYS_LISTMOUNT, uintptr(unsafe.Pointer(&req)),
		uintptr(unsafe.Pointer(&id)), 1, 0, 0, 0)
	// ENOSYS: an older kernel; EPERM: a seccomp filter (a container's)
	// that does not know the call.
	if errors.Is(errno, unix.ENOSYS) || errors.Is(errno, unix.EPERM) {
		return Mountinfo
	}
	// A filter may know one call and not the other.
	buf := make([]byte, sizeofStatmount)
	if err := statmountRaw(id, statmountMntBasic, buf); errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return Mountinfo
	}
	return Statmount
})

// KernelRelease is the running kernel's release ("6.1.0-28-amd64"), for
// the log line that says which of the kernel's paths RSA takes.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
