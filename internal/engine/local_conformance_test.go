package engine_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/enginetest"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// The local engine keeps every contract of engine.Engine, alone and
// behind the retries the daemon wraps it in.
func TestLocalConformance(t *testing.T) {
	testutil.RequireRoot(t)
	// A user of this test's own: the package's other tests create and
	// remove theirs.
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-suite")
	for _, tc := range []struct {
		name string
		wrap func(engine.Engine) engine.Engine
	}{
		{"Local", func(e engine.Engine) engine.Engine { return e }},
		{"Retrying", func(e engine.Engine) engine.Engine { return engine.WithRetry(e, 3, time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testutil.TempDir(t)
			root := filepath.Join(dir, "ramdisk")
			t.Cleanup(func() { noMountsBelow(t, dir) })
			enginetest.Run(t, enginetest.Harness{
				New: func(t *testing.T) engine.Engine {
					l, err := engine.NewLocal(root)
					if err != nil {
						t.Fatal(err)
					}
					return tc.wrap(l)
				},
				Root:   root,
				Parts:  func(size int64) []job.Part { return []job.Part{{Node: "local", Bytes: size}} },
				UID:    u.UID,
				GID:    u.GID,
				Kernel: true,
			})
		})
	}
}

// noMountsBelow fails t if the suite left a mount below dir, and detaches
// what it left, so that the directory can go.
func noMountsBelow(t *testing.T, dir string) {
	t.Helper()
	ms, err := mounttest.UnmountBelow(dir)
	if err != nil {
		t.Errorf("reading the mount table: %v", err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Point, dir+"/") {
			t.Errorf("left mounted after the suite: %s %s at %s", m.FSType, m.Source, m.Point)
		}
	}
}
