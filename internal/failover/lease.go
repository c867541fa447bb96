// Package failover is the lease that makes one rsa serve of a failover
// pair the active one: an exclusive lock on a file in the state directory
// both control hosts share, as Slurm's backup controller shares
// StateSaveLocation. The lock manager of the file system that holds it
// (the kernel; on NFSv4 the server, which lets a lock of a client that
// stopped renewing its lease go) decides who holds it, never a timer of
// the two hosts: whichever holds the lock is active, the other waits for
// it as the standby. The holder writes who it is and where the standby
// forwards to (Info) beside the lock.
//
// A holder that lost its lock without noticing (its NFS lease expired
// while it was cut off) is fenced by the epoch its take-over wrote to the
// state (store.TakeOver), which every later write of it checks, and which
// the agents compare with the newest they have seen.
package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockName and infoName are the lease's files in the state directory.
const (
	lockName = "rsa.lease"
	infoName = "rsa.active"
)

// Info is what the active rsa serve says of itself beside the lock.
type Info struct {
	Host  string    `json:"host"`  // its host name
	Addr  string    `json:"addr"`  // failover.advertise: where the standby forwards
	PID   int       `json:"pid"`   // on Host
	Epoch int64     `json:"epoch"` // the epoch it took the state over with
	Since time.Time `json:"since"`
}

// Lease is a held lease.
type Lease struct {
	dir string
	f   *os.File
}

// TryAcquire takes the lease on dir if it is free, and reports whether it
// did. It never waits.
func TryAcquire(dir string) (*Lease, bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("opening the failover lease in %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("locking the failover lease in %s (the state directory must be on a file system with working locks, such as NFSv4): %w", dir, err)
	}
	return &Lease{dir: dir, f: f}, true, nil
}

// Acquire waits until it holds the lease on dir, trying every interval,
// and calls waiting once, when it first finds the lease held by another.
func Acquire(ctx context.Context, dir string, interval time.Duration, waiting func()) (*Lease, error) {
	told := false
	for {
		l, ok, err := TryAcquire(dir)
		if err != nil || ok {
			return l, err
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Announce writes i beside the lock, replacing the last holder's, for the
// standby and rsa status to read.
func (l *Lease) Announce(i Info) error {
	b, err := json.Marshal(i)
	if err != nil {
		return err
	}
	tmp := filepath.Join(l.dir, infoName+".new")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("announcing the active rsa serve: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, infoName)); err != nil {
		return fmt.Errorf("announcing the active rsa serve: %w", err)
	}
	return nil
}

// Check writes to the lock's file through the descriptor that holds the
// lock and syncs it: on NFS a lock the server gave up (its lease expired)
// fails that descriptor's I/O, and the holder learns it lost the lease.
// On a local file system it fails only with the disk.
func (l *Lease) Check() error {
	stamp := fmt.Appendf(nil, "%d\n", time.Now().UnixNano())
	if _, err := l.f.WriteAt(stamp, 0); err != nil {
		return fmt.Errorf("the failover lease: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("the failover lease: %w", err)
	}
	return nil
}

// Release gives the lease up; the standby takes it at its next try.
func (l *Lease) Release() error { return l.f.Close() }

// Active reads what the lease's holder announced. An announcement may be
// the last holder's, which is gone: the caller that finds it silent says
// so.
func Active(dir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, infoName))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, errors.New("no rsa serve has announced itself active yet")
	}
	if err != nil {
		return Info{}, fmt.Errorf("reading the active rsa serve's announcement: %w", err)
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil || i.Addr == "" {
		return Info{}, fmt.Errorf("the active rsa serve's announcement in %s does not parse", filepath.Join(dir, infoName))
	}
	return i, nil
}
