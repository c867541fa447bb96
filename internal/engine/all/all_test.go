package all

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// Open gives each config its engine and the access that goes with it. The
// local engine has no nodes of its own and stages nowhere but here; the
// gluster engine needs the daemon's identity before anything else.
func TestOpen(t *testing.T) {
	testutil.RequireRoot(t) // the local engine makes its root root's
	policy := mount.Policy{AllowedPaths: []string{"/home"}}
	for _, tc := range []struct {
		name   string
		cfg    func(dir string) *config.Config
		access access.Access // nil: Open fails, with err in its message
		err    string
	}{
		{"local", func(dir string) *config.Config {
			return &config.Config{Engine: config.EngineLocal, RamdiskRoot: filepath.Join(dir, "ramdisk"), Scheduler: config.SchedulerNone}
		}, access.Local{Policy: policy}, ""},
		{"local, without a scheduler to name node namespaces", func(dir string) *config.Config {
			return &config.Config{Engine: config.EngineLocal, RamdiskRoot: filepath.Join(dir, "ramdisk"), Scheduler: config.SchedulerNone,
				Slurm: config.Slurm{NodeNamespaces: "/run/rsa/nodes"}}
		}, access.Local{Policy: policy}, ""},
		{"local, with Slurm's node namespaces", func(dir string) *config.Config {
			return &config.Config{Engine: config.EngineLocal, RamdiskRoot: filepath.Join(dir, "ramdisk"), Scheduler: config.SchedulerSlurm,
				Slurm: config.Slurm{NodeNamespaces: "/run/rsa/nodes"}}
		}, access.Namespaces{Dir: "/run/rsa/nodes", Self: "/usr/bin/rsa", Policy: policy}, ""},
		{"gluster without the daemon's identity", func(dir string) *config.Config {
			return &config.Config{Engine: gluster.Name, RamdiskRoot: filepath.Join(dir, "ramdisk"),
				EngineConfig: &gluster.Config{PKI: filepath.Join(dir, "no-pki")}}
		}, nil, "cluster.pki"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, access, err := Open(tc.cfg(t.TempDir()), Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Self: "/usr/bin/rsa", Policy: policy})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() != config.EngineLocal || !equalAccess(access, tc.access) {
				t.Errorf("engine %s, access %#v; want local, %#v", e.Name(), access, tc.access)
			}
			if _, ok := engine.As[engine.Stager](e); ok {
				t.Error("the local engine stages itself: the daemon would not stage on this host")
			}
			if _, ok := engine.As[engine.Nodes](e); ok {
				t.Error("the local engine has nodes of its own")
			}
		})
	}
}

// equalAccess compares the accesses Open makes, all of comparable
// fields but a policy's slices.
func equalAccess(a, b access.Access) bool {
	switch a := a.(type) {
	case access.Local:
		b, ok := b.(access.Local)
		return ok && strings.Join(a.Policy.AllowedPaths, ":") == strings.Join(b.Policy.AllowedPaths, ":")
	case access.Namespaces:
		b, ok := b.(access.Namespaces)
		return ok && a.Dir == b.Dir && a.Self == b.Self && strings.Join(a.Policy.AllowedPaths, ":") == strings.Join(b.Policy.AllowedPaths, ":")
	}
	return false
}
