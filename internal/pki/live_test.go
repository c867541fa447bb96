package pki

import (
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// reports records what a Live reported.
type reports struct {
	mu   sync.Mutex
	ids  []*Identity
	errs []error
}

func (r *reports) report(id *Identity, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
	} else {
		r.ids = append(r.ids, id)
	}
}

func (r *reports) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids), len(r.errs)
}

func (r *reports) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) == 0 {
		return nil
	}
	return r.errs[len(r.errs)-1]
}

// moveIn renames the file name of dir from into dir to, as an
// administrator installs a file (or as scp replaces one).
func moveIn(t *testing.T, from, to, name string) {
	t.Helper()
	if err := os.Rename(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
		t.Fatal(err)
	}
}

// An agent and a daemon serving from Live identities take a renewed
// certificate, and a revocation list, at their next handshake, without a
// restart; files half installed, or for another role or host, leave the
// identity as it was.
func TestLiveReload(t *testing.T) {
	ca := newCA(t, "cluster")
	agentFiles := issue(t, ca, "rsa1", RoleStorage, IssueOptions{})
	agentDir := filepath.Dir(agentFiles.Cert)
	ctlFiles := issue(t, ca, "ctl", RoleControl, IssueOptions{})
	var agentReports, ctlReports reports
	agent, err := LoadLive(agentFiles, agentReports.report)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := LoadLive(ctlFiles, ctlReports.report)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ServerConfigFrom(agent)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon makes a config per connection from its current identity,
	// as the agents' client does.
	dial := func() result {
		return handshake(t, server, clientConfig(t, ctl.Current(), "rsa1", KindStorage))
	}
	servedSerial := func(r result) *big.Int {
		t.Helper()
		if r.serverErr != nil || r.clientErr != nil {
			t.Fatalf("handshake: agent %v, daemon %v", r.serverErr, r.clientErr)
		}
		return r.clientState.PeerCertificates[0].SerialNumber
	}
	first := agent.Current().Certificate().SerialNumber
	if got := servedSerial(dial()); got.Cmp(first) != 0 {
		t.Fatalf("served serial %v, want %v", got, first)
	}
	if n, e := agentReports.counts(); n+e != 0 {
		t.Errorf("reloads with no file changed: %d, errors %d", n, e)
	}

	// Renewed: the key moved in first, its certificate a moment later.
	renewed := filepath.Dir(issue(t, ca, "rsa1", RoleStorage, IssueOptions{Validity: 400 * day}).Cert)
	moveIn(t, renewed, agentDir, KeyFile)
	for range 2 {
		if got := servedSerial(dial()); got.Cmp(first) != 0 {
			t.Fatalf("with the new key and the old certificate, served serial %v, want the old %v", got, first)
		}
	}
	if err := agentReports.lastErr(); err == nil || !strings.Contains(err.Error(), "is not the key of") {
		t.Errorf("the half-installed files were reported as %v", err)
	}
	if _, e := agentReports.counts(); e != 1 {
		t.Errorf("the same half-installed files were loaded and reported %d times, want once", e)
	}
	moveIn(t, renewed, agentDir, CertFile)
	second := servedSerial(dial())
	if second.Cmp(first) == 0 {
		t.Fatal("the agent still serves its old certificate after the new one was installed")
	}
	if v := time.Until(agent.Current().Certificate().NotAfter); v < 399*day {
		t.Errorf("the current identity is valid for %v, want the renewed one's 400 days", v)
	}
	if n, _ := agentReports.counts(); n != 1 {
		t.Errorf("%d reloads reported, want 1", n)
	}

	// The daemon's renewed certificate, the same way.
	ctlRenewed := filepath.Dir(issue(t, ca, "ctl", RoleControl, IssueOptions{}).Cert)
	moveIn(t, ctlRenewed, filepath.Dir(ctlFiles.Cert), KeyFile)
	moveIn(t, ctlRenewed, filepath.Dir(ctlFiles.Cert), CertFile)
	r := dial()
	servedSerial(r)
	if got, want := r.serverState.PeerCertificates[0].SerialNumber, ctl.Current().Certificate().SerialNumber; got.Cmp(want) != 0 {
		t.Errorf("the daemon presented serial %v, want its renewed %v", got, want)
	}
	if n, _ := ctlReports.counts(); n != 1 {
		t.Errorf("the daemon's reloads: %d, want 1", n)
	}

	// A revocation list installed on the agent refuses the daemon's
	// certificate from the next handshake.
	if _, _, err := Revoke(ca, []*big.Int{ctl.Current().Certificate().SerialNumber}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agentFiles.CRL, readAll(t, ca)[CRLFile], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := dial(); r.serverErr == nil || !strings.Contains(r.serverErr.Error(), "is revoked") {
		t.Fatalf("the agent accepted a revoked caller after its list was installed: %v", r.serverErr)
	}
	// ... and removed, lets it in again.
	if err := os.Remove(agentFiles.CRL); err != nil {
		t.Fatal(err)
	}
	servedSerial(dial())

	// A certificate for another role, or another host, is not taken.
	for _, other := range []struct {
		node string
		role Role
		want string
	}{{"rsa1", RoleCompute, "has role compute, not storage"}, {"rsa9", RoleStorage, "names rsa9, not rsa1"}} {
		dir := filepath.Dir(issue(t, ca, other.node, other.role, IssueOptions{}).Cert)
		moveIn(t, dir, agentDir, KeyFile)
		moveIn(t, dir, agentDir, CertFile)
		if got := servedSerial(dial()); got.Cmp(second) != 0 {
			t.Errorf("%s %s installed: served serial %v, want the old %v", other.node, other.role, got, second)
		}
		if err := agentReports.lastErr(); err == nil || !strings.Contains(err.Error(), other.want) {
			t.Errorf("%s %s installed: reported %v, want %q", other.node, other.role, err, other.want)
		}
	}
}
