// Package enginetest is the conformance suite of package engine: one set
// of checks of the contracts written on engine.Engine, which every engine
// runs against RAMDISKs of its own, so that an engine that keeps one
// contract and breaks another is caught by its tests and not by the
// daemon. It is imported only by tests.
//
// An engine runs the suite from a test of its own, with a Harness that
// gives the engine and what the suite needs to use it: where RAMDISKs
// appear, how a RAMDISK's size is spread over RSA nodes, the jobs' user,
// and what the engine can be asked beyond the Engine interface:
//
//	func TestLocalConformance(t *testing.T) {
//		testutil.RequireRoot(t)
//		u := testutil.EnsureUser(t)
//		root := filepath.Join(testutil.TempDir(t), "ramdisk")
//		enginetest.Run(t, enginetest.Harness{
//			New: func(t *testing.T) engine.Engine {
//				l, err := engine.NewLocal(root)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return l
//			},
//			Root:   root,
//			Parts:  func(size int64) []job.Part { return []job.Part{{Node: "local", Bytes: size}} },
//			UID:    u.UID,
//			GID:    u.GID,
//			Kernel: true,
//		})
//	}
//
// Each contract is one subtest of Run. A subtest builds RAMDISKs of its
// own (each for a job of its own), asserts exact outcomes, and destroys
// what it built when it ends, also when it fails. None is ever skipped: a
// check that needs what only some engines have is left out of the run
// when the Harness says the engine lacks it (Kernel, Silence), so that a
// run reports exactly the checks it made.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Harness is what the suite needs of an engine under test.
type Harness struct {
	// New returns the engine under test. The suite calls it once or more
	// per subtest: a second engine stands for a daemon restarted after a
	// crash, which must find what the first built (Construct again, List),
	// so the engines New returns must share what they build, as two
	// daemons on one host share its mounts and RSA nodes.
	New func(t *testing.T) engine.Engine
	// Root is the engine's RAMDISK root: the RAMDISK of job ID appears at
	// engine.DirFor(Root, ID).
	Root string
	// Parts spreads a RAMDISK of size bytes over the RSA nodes the engine
	// builds on. The suite asks for RAMDISKs of Size bytes alone.
	Parts func(size int64) []job.Part
	// UID and GID are the jobs' user: a real user, neither root nor
	// nobody (the suite checks that nobody is refused).
	UID, GID uint32
	// Kernel says that the engine mounts a file system of its own at a
	// RAMDISK's directory, whose owner, mount flags, gate, read-only state
	// and holders the kernel enforces. The suite then checks those, as
	// root, as the jobs' user and as nobody (so it must run as root), and
	// holds a RAMDISK by opening a file for writing in it. Without Kernel
	// those checks are left out and Hold must be set.
	Kernel bool
	// Hold makes the RAMDISK r busy, as a process with a file open for
	// writing in it would, until release is called; the suite calls
	// release once. nil: the suite opens a file for writing in r.Dir,
	// which only a Kernel engine notices.
	Hold func(t *testing.T, r engine.Ramdisk) (release func())
	// SealsUnderWriters says that Seal succeeds while a file in the
	// RAMDISK is open for writing, and that file's next write fails with
	// EROFS (engine gluster: the volume turns read-only on its bricks,
	// whoever holds a file), instead of Seal failing wrapping
	// engine.ErrBusy (engine local: the kernel remounts no tmpfs read-only
	// under a writer). Only with Kernel and without Hold: the suite writes
	// through the file it holds open.
	SealsUnderWriters bool
	// Silence makes node silent, as an RSA node whose agent is down is to
	// the engine, and returns answer, which makes it answer again; the
	// suite calls answer once. nil: the debt of a silent node (Destroy's
	// *engine.DebtError) is not checked.
	Silence func(t *testing.T, node string) (answer func())
}

// Size is the size of every RAMDISK the suite builds: room for the
// megabyte it writes, parts of at least 1 MiB on up to 16 RSA nodes.
const Size = 16 << 20

// firstJob is the job of the first RAMDISK of a run: the jobs count up
// from it, one per RAMDISK.
const firstJob = 4301

// Run checks the engine of h against every contract of engine.Engine, one
// subtest each.
func Run(t *testing.T, h Harness) {
	t.Helper()
	switch {
	case h.New == nil || h.Parts == nil || h.Root == "":
		t.Fatal("enginetest: the Harness needs New, Root and Parts")
	case h.UID == 0 || h.UID == asuser.Nobody.UID:
		t.Fatalf("enginetest: the jobs' user (uid %d) must be neither root nor nobody", h.UID)
	case !h.Kernel && h.Hold == nil:
		t.Fatal("enginetest: an engine without Kernel needs Hold: the suite cannot hold its RAMDISKs by opening a file")
	case h.SealsUnderWriters && (!h.Kernel || h.Hold != nil):
		t.Fatal("enginetest: SealsUnderWriters needs Kernel and no Hold: the suite writes through the file it holds open")
	case h.Kernel && os.Geteuid() != 0:
		t.Fatal("enginetest: the Kernel checks need root: they switch to the jobs' user and to nobody")
	}
	s := &suite{h: h, next: firstJob}
	_, reattaches := engine.As[engine.Reattacher](h.New(t))
	for _, c := range []struct {
		name string
		run  func(*testing.T)
		in   bool // whether this run makes the check
	}{
		{"Construct", s.testConstruct, true},
		{"ConstructAgain", s.testConstructAgain, true},
		{"ConstructRootOnly", s.testConstructRootOnly, h.Kernel},
		{"Device", s.testDevice, true},
		{"Seal", s.testSeal, true},
		{"SealBusy", s.testSealBusy, true},
		{"Revoke", s.testRevoke, true},
		{"DestroyMissing", s.testDestroyMissing, true},
		{"DestroyBusy", s.testDestroyBusy, true},
		{"Usage", s.testUsage, true},
		{"List", s.testList, true},
		{"CheckHealthy", s.testCheckHealthy, true},
		{"DestroySilentNode", s.testDestroySilentNode, h.Silence != nil},
		{"Reattach", s.testReattach, reattaches && h.Kernel},
	} {
		if c.in {
			t.Run(c.name, c.run)
		}
	}
}

// testReattach (engine.Reattacher): a RAMDISK this host no longer mounts
// (another host had it: the standby of a failover pair took over) is
// mounted again, its files there, and again is ok; once destroyed it is
// reported gone, and nothing is left of it here.
func (s *suite) testReattach(t *testing.T) {
	e := s.h.New(t)
	ra, _ := engine.As[engine.Reattacher](e)
	r := s.ramdisk()
	s.construct(t, e, r)
	kept := filepath.Join(r.Dir, "kept")
	if err := os.WriteFile(kept, []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(r.Dir, unix.MNT_DETACH); err != nil {
		t.Fatalf("unmounting the RAMDISK here: %v", err)
	}
	if _, ok := device(t, e, r); ok {
		t.Fatal("the RAMDISK is still mounted here after its unmount")
	}
	for i := range 2 {
		ok, err := ra.Reattach(t.Context(), r)
		if err != nil || !ok {
			t.Fatalf("Reattach #%d of a RAMDISK that exists: %v %v", i+1, ok, err)
		}
	}
	if _, ok := device(t, e, r); !ok {
		t.Fatal("Reattach reported the RAMDISK mounted, and Device does not find it")
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "before" {
		t.Fatalf("the file written before, read after Reattach: %q %v", b, err)
	}
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if ok, err := ra.Reattach(t.Context(), r); ok || err != nil {
		t.Fatalf("Reattach of a destroyed RAMDISK: %v %v, want false and no error", ok, err)
	}
	if _, err := os.Lstat(r.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Reattach of a destroyed RAMDISK left %s (%v)", r.Dir, err)
	}
}

type suite struct {
	h    Harness
	next int64 // the job of the next RAMDISK
}

// ramdisk describes a RAMDISK of a job of its own, not built yet.
func (s *suite) ramdisk() engine.Ramdisk {
	id := s.next
	s.next++
	return engine.Ramdisk{Job: id, Dir: engine.DirFor(s.h.Root, id), Parts: s.h.Parts(Size), Build: 1, UID: s.h.UID, GID: s.h.GID}
}

// construct builds r with e and has it destroyed when t ends, also when
// Construct fails (it leaves what Destroy removes).
func (s *suite) construct(t *testing.T, e engine.Engine, r engine.Ramdisk) {
	t.Helper()
	t.Cleanup(func() {
		// Not t.Context(): it is cancelled before the cleanup runs.
		if err := e.Destroy(context.Background(), r); err != nil {
			t.Errorf("destroying the RAMDISK of job %d after the test: %v", r.Job, err)
		}
	})
	if err := e.Construct(t.Context(), r); err != nil {
		t.Fatalf("Construct of the RAMDISK of job %d: %v", r.Job, err)
	}
}

// holder keeps a RAMDISK busy (hold).
type holder struct {
	file    *os.File // the file held open for writing; nil under a Harness's Hold
	release func()
}

// hold makes r busy until the holder is released, or t ends.
func (s *suite) hold(t *testing.T, r engine.Ramdisk) *holder {
	t.Helper()
	if s.h.Hold != nil {
		h := &holder{release: sync.OnceFunc(s.h.Hold(t, r))}
		t.Cleanup(h.release)
		return h
	}
	f, err := os.OpenFile(filepath.Join(r.Dir, "held"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatalf("opening a file for writing in the RAMDISK: %v", err)
	}
	// Its close is not checked: a file whose writes a seal refused may
	// report that again when closed.
	h := &holder{file: f, release: sync.OnceFunc(func() { f.Close() })}
	t.Cleanup(h.release)
	return h
}

// device is e.Device(r), which must not fail.
func device(t *testing.T, e engine.Engine, r engine.Ramdisk) (uint64, bool) {
	t.Helper()
	dev, ok, err := e.Device(r)
	if err != nil {
		t.Fatalf("Device of the RAMDISK of job %d: %v", r.Job, err)
	}
	return dev, ok
}

// listed is the entry of List that names r's job, if any.
func listed(t *testing.T, e engine.Engine, r engine.Ramdisk) (engine.Found, bool) {
	t.Helper()
	found, err := e.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var mine []engine.Found
	for _, f := range found {
		if f.Job == r.Job {
			mine = append(mine, f)
		}
	}
	if len(mine) > 1 {
		t.Fatalf("List reports job %d %d times: %+v", r.Job, len(mine), mine)
	}
	if len(mine) == 0 {
		return engine.Found{}, false
	}
	return mine[0], true
}

// bindAt bind-mounts r.Dir at target, as a job path is, and detaches it
// when t ends, whatever Destroy did. target must have been made before r
// was built, so that its removal, which t's cleanup runs after Destroy,
// cannot reach into the RAMDISK.
func bindAt(t *testing.T, r engine.Ramdisk, target string) {
	t.Helper()
	if err := unix.Mount(r.Dir, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting the RAMDISK at %s: %v", target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("detaching the bind mount at %s: %v", target, err)
		}
	})
}

func (s *suite) user() asuser.Identity { return asuser.Identity{UID: s.h.UID, GID: s.h.GID} }

// Construct makes r.Dir, empty; under Kernel owned by the job's user,
// mode 0700, a mount nosuid and nodev of its own whose device Device
// gives, behind a gate the job's user passes and no one else does.
func (s *suite) testConstruct(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		t.Fatalf("reading the new RAMDISK: %v", err)
	}
	if len(entries) != 0 {
		t.Errorf("the new RAMDISK at %s holds %d entries (the first %q); want it empty", r.Dir, len(entries), entries[0].Name())
	}
	dev, ok := device(t, e, r)
	if !ok {
		t.Fatal("Device of the new RAMDISK: ok is false")
	}
	if !s.h.Kernel {
		return
	}
	var st unix.Stat_t
	if err := unix.Stat(r.Dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != s.h.UID || st.Gid != s.h.GID || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o7777 != 0o700 {
		t.Errorf("the new RAMDISK's root is owned by %d:%d with mode %#o; want a directory of %d:%d with mode 0700",
			st.Uid, st.Gid, st.Mode, s.h.UID, s.h.GID)
	}
	if st.Dev != dev {
		t.Errorf("Device = %d:%d, but the RAMDISK's root is on %d:%d", unix.Major(dev), unix.Minor(dev), unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	m, ok, err := mount.MountedAt(r.Dir)
	switch {
	case err != nil:
		t.Fatal(err)
	case !ok:
		t.Fatalf("nothing is mounted at %s", r.Dir)
	case !m.Unprivileged():
		t.Errorf("the RAMDISK's mount %s (%s) has attributes %#x: not nosuid and nodev", m.Source, m.FSType, m.Attr)
	}
	gate := engine.GateFor(s.h.Root, r.Job)
	var gst unix.Stat_t
	if err := unix.Stat(gate, &gst); err != nil {
		t.Fatal(err)
	}
	if gst.Uid != 0 || gst.Gid != 0 || gst.Mode&0o007 != 0 {
		t.Errorf("the gate %s is owned by %d:%d with mode %#o; want root's, closed to others", gate, gst.Uid, gst.Gid, gst.Mode)
	}
	mine := filepath.Join(r.Dir, "mine")
	if err := asuser.Do(s.user(), func() error { return os.WriteFile(mine, []byte("mine\n"), 0o600) }); err != nil {
		t.Errorf("the job's user cannot write in its RAMDISK: %v", err)
	}
	if err := asuser.Do(s.user(), func() error { _, err := os.ReadDir(gate); return err }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("the job's user listing the gate %s: %v; want a permission error (it may pass, not list)", gate, err)
	}
	if err := asuser.Do(asuser.Nobody, func() error { _, err := os.Stat(r.Dir); return err }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("nobody reaching %s: %v; want a permission error", r.Dir, err)
	}
}

// Construct of a RootOnly RAMDISK (one that will hold an input image)
// makes its root root's, mode 0700, behind a gate the job's user does not
// pass: no user can reach what RSA builds there.
func (s *suite) testConstructRootOnly(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	r.RootOnly = true
	s.construct(t, e, r)
	var st unix.Stat_t
	if err := unix.Stat(r.Dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 0 || st.Gid != 0 || st.Mode&0o7777 != 0o700 {
		t.Errorf("a RootOnly RAMDISK's root is owned by %d:%d with mode %#o; want root's, 0700", st.Uid, st.Gid, st.Mode&0o7777)
	}
	if m, ok, err := mount.MountedAt(r.Dir); err != nil || !ok || !m.Unprivileged() {
		t.Errorf("a RootOnly RAMDISK's mount: %+v, %v, %v; want one, nosuid and nodev", m, ok, err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "root's"), []byte("x"), 0o400); err != nil {
		t.Errorf("root cannot write in a RootOnly RAMDISK: %v", err)
	}
	for _, p := range []string{r.Dir, filepath.Join(r.Dir, "root's")} {
		if err := asuser.Do(s.user(), func() error { _, err := os.Stat(p); return err }); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("the job's user reaching %s of a RootOnly RAMDISK: %v; want a permission error", p, err)
		}
	}
}

// Construct of a RAMDISK that exists succeeds without change, also from
// an engine that did not build it (a daemon restarted after a crash).
func (s *suite) testConstructAgain(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	dev, _ := device(t, e, r)
	kept := filepath.Join(r.Dir, "kept")
	want := []byte("written before Construct was called again\n")
	if err := os.WriteFile(kept, want, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, again := range []struct {
		who string
		e   engine.Engine
	}{{"the engine that built it", e}, {"another engine", s.h.New(t)}} {
		if err := again.e.Construct(t.Context(), r); err != nil {
			t.Fatalf("Construct again by %s: %v", again.who, err)
		}
		if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, want) {
			t.Errorf("after Construct again by %s, the file written before reads %q, %v; want %q", again.who, got, err, want)
		}
		if d, ok := device(t, e, r); !ok || d != dev {
			t.Errorf("after Construct again by %s, Device = %d, %v; want %d, true (the same file system)", again.who, d, ok, dev)
		}
	}
}

// Device reports ok=false before Construct and after Destroy, and the
// same device while the RAMDISK exists.
func (s *suite) testDevice(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	if dev, ok := device(t, e, r); ok {
		t.Fatalf("Device before Construct = %d, true; want ok false", dev)
	}
	s.construct(t, e, r)
	dev, ok := device(t, e, r)
	if !ok {
		t.Fatal("Device after Construct: ok is false")
	}
	if again, ok := device(t, s.h.New(t), r); !ok || again != dev {
		t.Errorf("Device asked again, of another engine = %d, %v; want %d, true", again, ok, dev)
	}
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if dev, ok := device(t, e, r); ok {
		t.Errorf("Device after Destroy = %d, true; want ok false", dev)
	}
}

// Seal makes the RAMDISK read-only on every mount of it, for root too
// (the suite runs as root); what it holds stays readable. Seal is
// idempotent.
func (s *suite) testSeal(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	var job string
	if s.h.Kernel {
		job = t.TempDir() // before Construct: see bindAt
	}
	s.construct(t, e, r)
	before := filepath.Join(r.Dir, "before")
	want := []byte("written before the seal\n")
	if err := os.WriteFile(before, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if s.h.Kernel {
		bindAt(t, r, job)
	}
	if err := e.Seal(t.Context(), r); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if s.h.Kernel {
		for _, p := range []string{filepath.Join(r.Dir, "late"), filepath.Join(job, "late")} {
			if err := os.WriteFile(p, []byte("x"), 0o600); !errors.Is(err, syscall.EROFS) {
				t.Errorf("writing %s in a sealed RAMDISK: %v; want EROFS", p, err)
			}
		}
		if err := appendTo(before, []byte("more")); !errors.Is(err, syscall.EROFS) {
			t.Errorf("appending to a file of a sealed RAMDISK: %v; want EROFS", err)
		}
	}
	if got, err := os.ReadFile(before); err != nil || !bytes.Equal(got, want) {
		t.Errorf("reading a sealed RAMDISK: %q, %v; want %q", got, err, want)
	}
	if err := e.Seal(t.Context(), r); err != nil {
		t.Errorf("Seal again: %v", err)
	}
}

// appendTo writes data at the end of the file p and syncs it: a client
// that caches writes (Gluster's write-behind) reports a refused write at
// the latest when asked to sync it.
func appendTo(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Seal while a file is open for writing fails wrapping ErrBusy and leaves
// the RAMDISK writable, and succeeds once the file is closed; or, for an
// engine that seals under writers (SealsUnderWriters), succeeds and the
// writer's next write fails with EROFS.
func (s *suite) testSealBusy(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	h := s.hold(t, r)
	if s.h.SealsUnderWriters {
		if err := e.Seal(t.Context(), r); err != nil {
			t.Fatalf("Seal under a writer: %v; want success (SealsUnderWriters)", err)
		}
		_, err := h.file.Write([]byte("written after the seal"))
		if err == nil {
			err = h.file.Sync()
		}
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("the writer's write after the seal: %v; want EROFS", err)
		}
		return
	}
	err := e.Seal(t.Context(), r)
	if !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("Seal with a file open for writing: %v; want an error wrapping ErrBusy", err)
	}
	if s.h.Kernel {
		if _, err := h.file.Write([]byte("written after the refused seal")); err != nil {
			t.Errorf("the writer's write after a refused seal: %v; want the RAMDISK still writable", err)
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "new"), []byte("x"), 0o600); err != nil {
			t.Errorf("writing a new file after a refused seal: %v; want the RAMDISK still writable", err)
		}
	}
	h.release()
	if err := e.Seal(t.Context(), r); err != nil {
		t.Fatalf("Seal once the writer is gone: %v", err)
	}
	if s.h.Kernel {
		if err := os.WriteFile(filepath.Join(r.Dir, "late"), []byte("x"), 0o600); !errors.Is(err, syscall.EROFS) {
			t.Errorf("writing after the seal: %v; want EROFS", err)
		}
	}
}

// Revoke closes the gate: the job's user, who reached r.Dir before, no
// longer does; root still does. Revoke is idempotent.
func (s *suite) testRevoke(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	stat := func() error { _, err := os.Stat(r.Dir); return err }
	if s.h.Kernel {
		if err := asuser.Do(s.user(), stat); err != nil {
			t.Fatalf("the job's user reaching its RAMDISK before Revoke: %v", err)
		}
	}
	if err := e.Revoke(t.Context(), r); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if s.h.Kernel {
		if err := asuser.Do(s.user(), stat); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("the job's user reaching its RAMDISK after Revoke: %v; want a permission error", err)
		}
	}
	if err := stat(); err != nil {
		t.Errorf("root reaching the RAMDISK after Revoke: %v", err)
	}
	if err := e.Revoke(t.Context(), r); err != nil {
		t.Errorf("Revoke again: %v", err)
	}
}

// Destroy of a RAMDISK that never existed succeeds, twice.
func (s *suite) testDestroyMissing(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	for _, when := range []string{"first", "again"} {
		if err := e.Destroy(t.Context(), r); err != nil {
			t.Errorf("Destroy (%s) of a RAMDISK that does not exist: %v", when, err)
		}
	}
	if dev, ok := device(t, e, r); ok {
		t.Errorf("Device after Destroy of a RAMDISK that never existed = %d, true", dev)
	}
}

// Destroy while a process holds the RAMDISK fails wrapping ErrBusy and
// leaves it whole; once nothing holds it, Destroy removes it and its bind
// mounts, and again succeeds. A RAMDISK built again afterwards is empty.
func (s *suite) testDestroyBusy(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	var job string
	if s.h.Kernel {
		job = t.TempDir() // before Construct: see bindAt
	}
	s.construct(t, e, r)
	dev, _ := device(t, e, r)
	kept := filepath.Join(r.Dir, "kept")
	want := []byte("written before Destroy\n")
	if err := os.WriteFile(kept, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if s.h.Kernel {
		bindAt(t, r, job)
	}
	h := s.hold(t, r)
	if err := e.Destroy(t.Context(), r); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("Destroy of a held RAMDISK: %v; want an error wrapping ErrBusy", err)
	}
	if d, ok := device(t, e, r); !ok || d != dev {
		t.Errorf("after a refused Destroy, Device = %d, %v; want %d, true", d, ok, dev)
	}
	if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, want) {
		t.Errorf("after a refused Destroy, the RAMDISK's file reads %q, %v; want %q", got, err, want)
	}
	h.release()
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Fatalf("Destroy once nothing holds the RAMDISK: %v", err)
	}
	if d, ok := device(t, e, r); ok {
		t.Errorf("Device after Destroy = %d, true; want ok false", d)
	}
	if s.h.Kernel {
		for _, p := range []string{r.Dir, job} {
			if m, ok, err := mount.MountedAt(p); err != nil || ok {
				t.Errorf("after Destroy, %s is still a mount point (of %s %s): %v", p, m.FSType, m.Source, err)
			}
		}
	}
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Errorf("Destroy again: %v", err)
	}
	if err := e.Construct(t.Context(), r); err != nil {
		t.Fatalf("Construct after Destroy: %v", err)
	}
	if entries, err := os.ReadDir(r.Dir); err != nil || len(entries) != 0 {
		t.Errorf("the RAMDISK built again after Destroy holds %d entries (%v); want it empty", len(entries), err)
	}
}

// Usage reports the RAMDISK's size, and more in use after a write.
func (s *suite) testUsage(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	before, err := e.Usage(r)
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if before.Size != r.Size() {
		t.Errorf("Usage of a new RAMDISK = %+v; want Size %d", before, r.Size())
	}
	const written = 1 << 20
	f, err := os.Create(filepath.Join(r.Dir, "megabyte"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(bytes.Repeat([]byte{'x'}, written))
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatalf("writing a megabyte into the RAMDISK: %v", err)
	}
	after, err := e.Usage(r)
	if err != nil {
		t.Fatalf("Usage after a write: %v", err)
	}
	if after.Size != r.Size() || after.Used-before.Used < written {
		t.Errorf("Usage before a write of %d bytes %+v, after %+v; want Size %d and Used grown by at least %d",
			written, before, after, r.Size(), written)
	}
}

// List finds a RAMDISK built by another engine (a leftover of a daemon
// that crashed), with its job, build and directory, and not once it is
// destroyed.
func (s *suite) testList(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	other := s.h.New(t)
	f, ok := listed(t, other, r)
	if !ok {
		t.Fatalf("List does not report the RAMDISK of job %d", r.Job)
	}
	// Build 0 and 1 both name a job's first RAMDISK (engine.Ramdisk).
	if max(f.Build, 1) != max(r.Build, 1) || f.Dir != r.Dir {
		t.Errorf("List reports %+v; want build %d at %s", f, r.Build, r.Dir)
	}
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if f, ok := listed(t, other, r); ok {
		t.Errorf("List reports %+v after its Destroy", f)
	}
}

// Check and Probe of a healthy RAMDISK find nothing out of reach, and two
// Checks are steady.
func (s *suite) testCheckHealthy(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	first, err := e.Check(t.Context(), r)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	second, err := e.Check(t.Context(), r)
	if err != nil {
		t.Fatalf("Check again: %v", err)
	}
	probed, err := e.Probe(r)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	for _, c := range []struct {
		what string
		d    engine.Degraded
	}{{"Check", first}, {"Check again", second}, {"Probe", probed}} {
		if len(c.d.Nodes) != 0 || c.d.Missing {
			t.Errorf("%s of a healthy RAMDISK = %+v; want no node out of reach, nothing lost", c.what, c.d)
		}
	}
	if !first.Steady(second) {
		t.Errorf("two Checks of a healthy RAMDISK, %+v then %+v, are not steady", first, second)
	}
}

// Destroy with an RSA node of the RAMDISK silent removes the rest and
// returns a *DebtError naming that node (its RAM is not free), again while
// it stays silent; once it answers, Destroy removes its part and
// succeeds.
func (s *suite) testDestroySilentNode(t *testing.T) {
	e := s.h.New(t)
	r := s.ramdisk()
	s.construct(t, e, r)
	node := r.Parts[len(r.Parts)-1].Node
	answer := sync.OnceFunc(s.h.Silence(t, node))
	t.Cleanup(answer) // before the RAMDISK's Destroy, which t.Cleanup runs last
	for _, when := range []string{"with the node silent", "again, the node still silent"} {
		err := e.Destroy(t.Context(), r)
		var debt *engine.DebtError
		if !errors.As(err, &debt) {
			t.Fatalf("Destroy %s: %v; want a *DebtError", when, err)
		}
		if !slices.Equal(debt.Nodes, []string{node}) || debt.Freed || errors.Is(err, engine.ErrBusy) {
			t.Errorf("Destroy %s: %#v (%v); want a debt of %s, its RAM not freed", when, debt, err, node)
		}
		if d, ok := device(t, e, r); ok {
			t.Errorf("Device after Destroy %s = %d, true; want the RAMDISK gone from this host", when, d)
		}
	}
	answer()
	if err := e.Destroy(t.Context(), r); err != nil {
		t.Fatalf("Destroy once %s answers: %v", node, err)
	}
	if f, ok := listed(t, e, r); ok {
		t.Errorf("List reports %+v after its debt was paid", f)
	}
}
