package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Exit codes of rsa health: those of Nagios-style checks, which most
// monitoring systems run as they are.
const (
	healthOK       = 0
	healthWarning  = 1
	healthCritical = 2
)

// healthReport is what rsa health found, for --json.
type healthReport struct {
	Status  string   `json:"status"` // OK, WARNING or CRITICAL
	Summary string   `json:"summary"`
	Jobs    []string `json:"jobs,omitempty"`  // the jobs behind a WARNING
	Nodes   []string `json:"nodes,omitempty"` // the RSA nodes behind a WARNING
	// Certificates are the certificates behind a WARNING: expiring
	// within --cert-within, or expired.
	Certificates []string `json:"certificates,omitempty"`
	// Quarantined are the RAMDISKs behind a WARNING that hold data no
	// job record knows of (rsa gc).
	Quarantined []string `json:"quarantined,omitempty"`
}

func healthCmd(g *globals) *cobra.Command {
	var lostWithin, certWithin time.Duration
	var textfile string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check RSA for monitoring: exit 0 OK, 1 WARNING (jobs wait for an administrator), 2 CRITICAL (daemon down)",
		Long: `health prints one line for a monitoring system and exits as a Nagios check does:

  0 OK        the daemon answers and no job waits for an administrator
  1 WARNING   a job's output waits in RAM after a failed stage-out
              (STAGE_OUT_FAILED), a RAMDISK could not be torn down
              (TEARDOWN_FAILED), or a job's output was lost with its RAMDISK
              (OUTPUT_LOST) within --lost-within; the jobs follow, one a line;
              or an RSA node's agent is silent (suspect or down), or the
              node takes no new RAMDISKs because glusterd's trusted pool is
              split there; the nodes follow, one a line;
              or a TLS certificate expires within --cert-within (30 days)
              or has expired: rsa serve's own, or an agent's as rsa serve's
              last handshake with it saw it (engine gluster); the
              certificates follow, one a line;
              or a RAMDISK holds data that no job record knows of (a
              state directory restored from an older backup?), which RSA
              keeps: rsa gc; the RAMDISKs follow, one a line
  2 CRITICAL  the daemon does not answer

Any user may run it: the states it counts are no secret (as rsa status
shows them), but only root sees other users' errors in the lines.

With --textfile FILE it writes the same as Prometheus series, for
node_exporter's textfile collector (a FILE ending .prom in its directory;
written whole, by a rename), and exits 0 whatever the status, which is in
the file: run it from a timer, as any user who may write there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := health(cmd, g, lostWithin, certWithin)
			if textfile != "" {
				return writeTextfile(textfile, rep, time.Now())
			}
			if g.json {
				if err := printJSON(os.Stdout, rep); err != nil {
					return err
				}
			} else {
				fmt.Printf("%s: %s\n", rep.Status, rep.Summary)
				for _, l := range slices.Concat(rep.Nodes, rep.Certificates, rep.Quarantined, rep.Jobs) {
					fmt.Println("  " + l)
				}
			}
			switch rep.Status {
			case "CRITICAL":
				return exitCode(healthCritical)
			case "WARNING":
				return exitCode(healthWarning)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&lostWithin, "lost-within", 24*time.Hour, "warn of jobs whose output was lost this recently")
	cmd.Flags().DurationVar(&certWithin, "cert-within", pki.ExpiryWarning, "warn of TLS certificates that expire this soon")
	cmd.Flags().StringVar(&textfile, "textfile", "", "write the result as Prometheus series to this file (node_exporter's textfile collector) and exit 0")
	addJSON(cmd, g)
	return cmd
}

func health(cmd *cobra.Command, g *globals, lostWithin, certWithin time.Duration) healthReport {
	critical := func(err error) healthReport {
		return healthReport{Status: "CRITICAL", Summary: "rsa serve does not answer: " + textsafe.Line(err.Error())}
	}
	c, err := g.client()
	if err != nil {
		return critical(err)
	}
	v, err := c.Version(cmd.Context())
	if err != nil {
		return critical(err)
	}
	// Every job not done (the list of all jobs is only the newest
	// 1,000, and a job waiting for an administrator may be older), and
	// the newest for recent losses.
	jobs, err := c.Jobs(cmd.Context(), false)
	if err != nil {
		return critical(err)
	}
	recent, err := c.Jobs(cmd.Context(), true)
	if err != nil {
		return critical(err)
	}
	for _, j := range recent {
		if lifecycle.PhaseOf(j.RSA) == lifecycle.PhaseOutputLost && j.Machine().Done() { // not done: in jobs already
			jobs = append(jobs, j)
		}
	}
	nodes, err := c.Nodes(cmd.Context())
	if err != nil {
		return critical(err)
	}
	certs, err := c.Certificates(cmd.Context())
	if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		// A daemon older than this rsa, or one reached from another
		// host, which does not say.
		certs, err = nil, nil
	}
	if err != nil {
		return critical(err)
	}
	quarantined, err := c.Quarantined(cmd.Context())
	if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		quarantined, err = nil, nil // a daemon older than this rsa
	}
	if err != nil {
		return critical(err)
	}
	rep := healthReport{Status: "OK", Certificates: expiring(certs, time.Now(), certWithin)}
	for _, q := range quarantined {
		rep.Quarantined = append(rep.Quarantined, quarantinedLine(q))
	}
	var held, total int64
	for _, n := range nodes {
		held += n.Used
		total += n.Capacity
		// A drained node is the administrator's own doing: not a warning.
		switch a := n.Agent; {
		case a == nil || n.Drain != nil:
		case !a.Up:
			rep.Nodes = append(rep.Nodes, fmt.Sprintf("RSA node %s: %s", textsafe.Line(n.Name), nodeState(n)))
		case a.Unpooled != "":
			rep.Nodes = append(rep.Nodes, fmt.Sprintf("RSA node %s: no new RAMDISKs: %s (restart glusterd on it if this stays)", textsafe.Line(n.Name), textsafe.Line(a.Unpooled)))
		}
	}
	active := 0
	for _, j := range jobs {
		if !j.Machine().Done() {
			active++
		}
		lost := lifecycle.PhaseOf(j.RSA) == lifecycle.PhaseOutputLost && time.Since(j.UpdatedAt) < lostWithin
		if lifecycle.NeedsAdmin(j.RSA) || lost {
			rep.Jobs = append(rep.Jobs, fmt.Sprintf("%s of %s: %s: %s", jobName(&j), textsafe.Line(j.User), j.RSA, textsafe.Line(j.Error)))
		}
	}
	rep.Summary = fmt.Sprintf("rsa serve %s answers; %d active jobs; %s of %s RSA RAM held",
		textsafe.Line(v.Version), active, units.FormatSize(held), units.FormatSize(total))
	if len(rep.Jobs) > 0 {
		rep.Status = "WARNING"
		rep.Summary = fmt.Sprintf("%d jobs need an administrator's attention (rsa log ID, then rsa retry or rsa discard where the output is still in RAM); %s", len(rep.Jobs), rep.Summary)
	}
	if len(rep.Certificates) > 0 {
		rep.Status = "WARNING"
		rep.Summary = fmt.Sprintf("%d TLS certificates expire within %s or have expired (renew them: rsa ca issue, or rsa ca request and rsa ca sign; rsa serve and the agents read the new files at their next connection); %s",
			len(rep.Certificates), pki.InDays(certWithin), rep.Summary)
	}
	if len(rep.Quarantined) > 0 {
		rep.Status = "WARNING"
		rep.Summary = fmt.Sprintf("%d RAMDISKs hold data no job record knows of (a state directory restored from an older backup?): RSA keeps them; %s", len(rep.Quarantined), rep.Summary)
	}
	if len(rep.Nodes) > 0 {
		rep.Status = "WARNING"
		rep.Summary = fmt.Sprintf("%d RSA nodes take no new RAMDISKs (rsa nodes says why); %s", len(rep.Nodes), rep.Summary)
	}
	if os.Geteuid() != 0 {
		rep.Summary += "; not root: other users' errors are not shown"
	}
	rep.Summary = strings.TrimSpace(rep.Summary)
	return rep
}

// writeTextfile writes rep as Prometheus series to path, whole: to a file
// beside it, then renamed over it, so that the collector never reads half
// of one. The values are counts and the status; no user's text.
func writeTextfile(path string, rep healthReport, now time.Time) error {
	status := map[string]int{"OK": healthOK, "WARNING": healthWarning, "CRITICAL": healthCritical}[rep.Status]
	var b strings.Builder
	series := []struct {
		name, help string
		value      float64
	}{
		{"rsa_health_status", "What rsa health found: 0 OK, 1 WARNING, 2 CRITICAL (rsa serve does not answer).", float64(status)},
		{"rsa_health_jobs", "Jobs that wait for an administrator or the job's user (STAGE_OUT_FAILED, TEARDOWN_FAILED) or lost their output within --lost-within.", float64(len(rep.Jobs))},
		{"rsa_health_nodes", "RSA nodes that take no new RAMDISKs: agent silent, or glusterd's pool split there.", float64(len(rep.Nodes))},
		{"rsa_health_certificates", "TLS certificates that expire within --cert-within or have expired.", float64(len(rep.Certificates))},
		{"rsa_health_quarantined", "RAMDISKs that hold data no job record knows of (rsa gc lists them).", float64(len(rep.Quarantined))},
		{"rsa_health_timestamp_seconds", "When rsa health ran.", float64(now.UnixMilli()) / 1000},
	}
	for _, s := range series {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", s.name, s.help, s.name, s.name, strconv.FormatFloat(s.value, 'f', -1, 64))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// expiring describes, one a line, the certificates of certs that expire
// within within of now or have expired, in the daemon's order (its own
// first, then the agents' by node).
func expiring(certs []api.CertificateView, now time.Time, within time.Duration) []string {
	var out []string
	for _, c := range certs {
		left := c.NotAfter.Sub(now)
		if left >= within {
			continue
		}
		who := fmt.Sprintf("agent of %s", textsafe.Line(c.Node))
		if c.Role == string(pki.RoleControl) {
			who = fmt.Sprintf("rsa serve on %s", textsafe.Line(c.Node))
		}
		when := fmt.Sprintf("expires on %s, in %s", c.NotAfter.UTC().Format(time.DateOnly), pki.InDays(left))
		if left <= 0 {
			when = fmt.Sprintf("expired on %s: its peers refuse it", c.NotAfter.UTC().Format(time.DateOnly))
		}
		out = append(out, fmt.Sprintf("%s: certificate (role %s, serial %s) %s", who, textsafe.Line(c.Role), textsafe.Line(c.Serial), when))
	}
	return out
}
