package action_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// bound checks that the node access was asked once to bind role over
// target on the job's compute nodes, and that the RAMDISK's root took the
// target's owner, group and mode.
func bound(role access.Role, target func(r *rig) string) func(t *testing.T, r *rig) {
	return func(t *testing.T, r *rig) {
		want := []accessCall{{method: "Bind", nodes: r.j.Hosts, role: role, target: target(r)}}
		if got := r.acc.made(); !slices.EqualFunc(got, want, sameCall) {
			t.Errorf("the node access was asked %+v; want %+v", got, want)
		}
		var root, dir syscall.Stat_t
		if err := syscall.Stat(r.rd().Dir, &root); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(target(r), &dir); err != nil {
			t.Fatal(err)
		}
		if root.Uid != dir.Uid || root.Gid != dir.Gid || root.Mode&0o7777 != dir.Mode&0o7777 {
			t.Errorf("the RAMDISK's root is %d:%d %o; want the %s's %d:%d %o", root.Uid, root.Gid, root.Mode&0o7777, role, dir.Uid, dir.Gid, dir.Mode&0o7777)
		}
	}
}

func sameCall(a, b accessCall) bool {
	return a.method == b.method && slices.Equal(a.nodes, b.nodes) && a.role == b.role && a.target == b.target && a.detach == b.detach
}

// nothingBound checks that the node access bound nothing.
func nothingBound(t *testing.T, r *rig) {
	if slices.ContainsFunc(r.acc.made(), func(c accessCall) bool { return c.method == "Bind" }) {
		t.Errorf("the node access was asked %+v; want no Bind", r.acc.made())
	}
}

// Mounting the input shows the RAMDISK at the input directory, dressed
// as that directory, unless the RAMDISK lost a part (the job would read
// an input with files missing) or the directory cannot take it.
func TestMountIn(t *testing.T) {
	input := func(r *rig) string { return r.j.Spec.Input }
	const lost = "the part of the RAMDISK on RSA node rsa02 is out of reach: the job reads its input from disk"
	runCases(t, lifecycle.MountIn, []actionCase{
		{name: "mounted", built: true, want: ev(lifecycle.EvMounted), check: bound(access.InputRole, input)},
		{name: "a part out of reach, its replicas serving", built: true,
			setup: func(r *rig) { r.port.probe = engine.Degraded{Nodes: []string{"rsa02"}} },
			want:  ev(lifecycle.EvMounted), check: bound(access.InputRole, input)},
		{name: "the probe fails", built: true,
			setup: func(r *rig) {
				r.port.probe, r.port.probeErr = engine.Degraded{Nodes: []string{"rsa02"}, Missing: true}, errInjected
			},
			want: ev(lifecycle.EvMounted), check: bound(access.InputRole, input)},
		{name: "a part lost", built: true,
			setup:  func(r *rig) { r.port.probe = engine.Degraded{Nodes: []string{"rsa02"}, Missing: true} },
			want:   lifecycle.Event{Kind: lifecycle.EvMountFailed, Nodes: []string{"rsa02"}},
			reason: []string{lost}, log: []string{"mount: " + lost}, check: nothingBound},
		{name: "the node access fails", built: true, setup: func(r *rig) { r.acc.failNext("Bind", errInjected) },
			want: ev(lifecycle.EvMountFailed), reason: []string{errInjected.Error()}},
		{name: "the input directory is gone", built: true,
			setup: func(r *rig) { r.j.Spec.Input = filepath.Join(filepath.Dir(r.j.Spec.Input), "gone") },
			want:  ev(lifecycle.EvMountFailed), reason: []string{"gone"}, check: nothingBound},
		{name: "the input directory is root's", built: true,
			setup: func(r *rig) {
				if err := os.Chown(r.j.Spec.Input, 0, 0); err != nil {
					r.t.Skip("chown needs root:", err)
				}
			},
			want: ev(lifecycle.EvMountFailed), reason: []string{"RSA never mounts over root's directories"}, check: nothingBound},
		{name: "the input directory the job's user cannot read", built: true,
			setup: func(r *rig) {
				if err := os.Chmod(r.j.Spec.Input, 0o311); err != nil {
					r.t.Fatal(err)
				}
			},
			want: ev(lifecycle.EvMountFailed), reason: []string{"may not be used by the job's user: it needs to read it"}, check: nothingBound},
		{name: "an input image the compute nodes cannot mount", built: true, setup: func(r *rig) { r.port.rootOnly = true },
			want: ev(lifecycle.EvMountFailed), reason: []string{"cannot mount an input image"},
			log: []string{"mount: the input image cannot be mounted"}, check: nothingBound},
	})
}

// Mounting the output shows the RAMDISK at the output directory, dressed
// as that directory; a private output needs compute nodes that can give
// each its own file system.
func TestMountOut(t *testing.T) {
	output := func(r *rig) string { return r.j.Spec.Output }
	runCases(t, lifecycle.MountOut, []actionCase{
		{name: "mounted", built: true, want: ev(lifecycle.EvMounted), check: bound(access.OutputRole, output)},
		{name: "the node access fails", built: true, setup: func(r *rig) { r.acc.failNext("Bind", errInjected) },
			want: ev(lifecycle.EvMountFailed), reason: []string{errInjected.Error()}},
		{name: "private output the compute nodes cannot have", built: true, setup: func(r *rig) { r.port.rootOnly = true },
			want: ev(lifecycle.EvMountFailed), reason: []string{"cannot have output of their own"}, check: nothingBound},
	})
}
