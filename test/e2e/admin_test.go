package e2e

// What an administrator meets installing and running RSA.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsa serve refuses a node capacity the host's RAM cannot hold, naming
// both sizes and the key to change, before it creates anything.
func TestServeRefusesMoreRAMThanTheHostHas(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	cfg := filepath.Join(dir, "rsa.toml")
	conf := fmt.Sprintf("state_dir = %q\nsocket = %q\nramdisk_root = %q\n[[nodes]]\nname = \"big\"\ncapacity = \"64T\"\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "rsa.sock"), filepath.Join(dir, "ramdisk"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := testutil.Command(t, rsaBin, "serve", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "promise 64.0T") || !strings.Contains(string(out), "nodes[].capacity") {
		t.Fatalf("rsa serve with 64T on this host: %v\n%s", err, out)
	}
	for _, p := range []string{"state", "rsa.sock", "ramdisk"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("the refused daemon created %s", p)
		}
	}
}
