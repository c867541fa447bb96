// Package metrics is what rsa serve tells Prometheus: jobs by state, how
// long each phase of a job's RAMDISK took, what was staged, each RSA node's
// RAM, failures, and the Slurm hooks' latency as the daemon sees them; and
// what rsa agent tells of its own node (NewAgent).
//
// Counters and histograms are recorded as things happen; job and node
// gauges are read from the daemon at each scrape (Source), so they are
// never out of step with the store. Metrics carry no user data: no paths,
// no user names, no job ids (which would make unbounded series).
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Phases of a job's RAMDISK, as the histograms name them.
const (
	Construct = "construct"
	StageIn   = "stage-in"
	Mount     = "mount"
	Switch    = "switch" // unmounting from the input path
	StageOut  = "stage-out"
	Teardown  = "teardown"
)

// NodeUse is one RSA node's RAM.
type NodeUse struct {
	Name                      string
	Capacity, Allocated, Used int64
	Drained                   bool
}

// AgentHealth is what the daemon last heard from one node's agent.
type AgentHealth struct {
	Node, Role string
	Up         bool
	// State is the heartbeat's: "up", "suspect" or "down".
	State    string
	Seen     time.Time // zero: never
	Rebooted int       // reboots the daemon saw
	// Unpooled: a rift in glusterd's trusted pool keeps the RSA node out
	// of new RAMDISKs though its agent answers.
	Unpooled bool
}

// agentStates are AgentHealth.State's values, each a series of
// rsa_agent_state.
var agentStates = []string{"up", "suspect", "down"}

// Certificate is one host's TLS certificate, as far as its expiry goes.
type Certificate struct {
	Node string
	// Role is the certificate's: control (the daemon's own), storage,
	// compute or both.
	Role     string
	NotAfter time.Time
}

// Debt is what one teardown left on a node it could not reach: a part of
// a RAMDISK on an RSA node (its RAM, or none where only the volume's
// definition is left), or a RAMDISK's mount on a compute node (no RSA
// RAM). The daemon removes it when the node answers again.
type Debt struct {
	Node  string
	Bytes int64
	Since time.Time
}

// JobCount is how many jobs not done are in one pair of states.
type JobCount struct {
	JobState, RSAState string
	N                  int
}

// Source is what a scrape reads from the daemon. Both methods are called
// at every scrape, concurrently with the daemon's work, and must be cheap.
type Source interface {
	Jobs(ctx context.Context) ([]JobCount, error)
	Nodes(ctx context.Context) ([]NodeUse, error)
	// Agents is empty without agents (engine local).
	Agents(ctx context.Context) []AgentHealth
	// Certificates are the daemon's own and each agent's, as its last
	// handshake verified it; empty without agents (engine local).
	Certificates(ctx context.Context) []Certificate
	// Debts are what teardowns left on nodes out of reach; empty
	// without agents (engine local).
	Debts(ctx context.Context) []Debt
	// Quarantined counts the RAMDISKs the last gc left alone for
	// holding data no job record knows of.
	Quarantined(ctx context.Context) int
}

// Metrics records and serves RSA's metrics.
type Metrics struct {
	reg      *prometheus.Registry
	phase    *prometheus.HistogramVec
	files    *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	failures *prometheus.CounterVec
	hooks    *prometheus.HistogramVec
	images   *prometheus.HistogramVec
	imageLen prometheus.Histogram
}

// New makes the metrics of a daemon reading gauges from src.
func New(src Source, version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rsa_phase_duration_seconds",
			Help: "How long each phase of a job's RAMDISK took (construct, stage-in, mount, switch, stage-out, teardown), failed or not.",
			// From a tmpfs mount (milliseconds) to a stage of hours.
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"phase"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rsa_staged_files_total", Help: "Files staged by successful stages, by direction (in, out).",
		}, []string{"direction"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rsa_staged_bytes_total", Help: "Bytes staged by successful stages, by direction (in, out).",
		}, []string{"direction"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rsa_failures_total", Help: "Failures by kind (the lifecycle event: stage-in-failed, stage-out-failed, ramdisk-lost, ...).",
		}, []string{"kind"}),
		hooks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rsa_slurm_hook_duration_seconds",
			Help:    "Time the daemon took to answer each Slurm hook (data_in and the like include their wait for RSA's work), by the way it came: via=\"lua-socket\" from burst_buffer.lua over the socket, via=\"rsa\" through a process (rsa slurm-bb, the prolog and epilog).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12),
		}, []string{"hook", "via"}),
		images: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rsa_input_image_build_seconds",
			Help:    "Time the builder took to turn a stage-in's tar stream into an input image (input=image), its read of the input included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, nil),
		imageLen: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rsa_input_image_bytes",
			Help:    "Size of each input image built (input=image).",
			Buckets: prometheus.ExponentialBuckets(1<<20, 4, 12),
		}),
	}
	// Every failure kind exists from the start, at 0: an alert on
	// increase() needs the series before the first failure.
	for _, k := range []string{"ineligible", "boot-failed", "stage-in-failed", "mount-failed", "unmount-busy",
		"stage-out-failed", "destroy-failed", "ramdisk-lost", "node-lost"} {
		m.failures.WithLabelValues(k)
	}
	for _, d := range []string{"in", "out"} {
		m.files.WithLabelValues(d)
		m.bytes.WithLabelValues(d)
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rsa_build_info", Help: "The daemon's version.", ConstLabels: prometheus.Labels{"version": version},
	})
	info.Set(1)
	m.reg.MustRegister(m.phase, m.files, m.bytes, m.failures, m.hooks, m.images, m.imageLen, info, &gauges{src: src},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ImageBuilt records one input image built: its size and build time.
func (m *Metrics) ImageBuilt(bytes int64, took time.Duration) {
	m.images.WithLabelValues().Observe(took.Seconds())
	m.imageLen.Observe(float64(bytes))
}

// ObservePhase records one phase's duration.
func (m *Metrics) ObservePhase(phase string, d time.Duration) {
	m.phase.WithLabelValues(phase).Observe(d.Seconds())
}

// AddStaged records what one successful stage copied.
func (m *Metrics) AddStaged(direction string, files, bytes int64) {
	m.files.WithLabelValues(direction).Add(float64(max(files, 0)))
	m.bytes.WithLabelValues(direction).Add(float64(max(bytes, 0)))
}

// Failure counts one failure of a kind.
func (m *Metrics) Failure(kind string) { m.failures.WithLabelValues(kind).Inc() }

// ObserveHook records how long one Slurm hook took, and how it came.
func (m *Metrics) ObserveHook(hook, via string, d time.Duration) {
	m.hooks.WithLabelValues(hook, via).Observe(d.Seconds())
}

// Handler serves the metrics in Prometheus' text format to the requests
// that name this server (CheckHost, with hosts the site's other names for
// it besides its hostname).
func (m *Metrics) Handler(hosts ...string) http.Handler {
	return CheckHost(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Timeout: 10 * time.Second}), hosts...)
}

// certExpiryName is the series of a certificate's expiry, the daemon's
// and the agents' alike.
const certExpiryName = "rsa_certificate_expiry_timestamp_seconds"

// gauges reads jobs and nodes from the daemon at each scrape.
type gauges struct{ src Source }

var (
	jobsDesc = prometheus.NewDesc("rsa_jobs", "Jobs RSA is not done with, by job-state and rsa-state.",
		[]string{"job_state", "rsa_state"}, nil)
	capacityDesc   = prometheus.NewDesc("rsa_node_capacity_bytes", "An RSA node's RAM for RAMDISKs.", []string{"node"}, nil)
	allocDesc      = prometheus.NewDesc("rsa_node_allocated_bytes", "RAM of an RSA node that jobs hold.", []string{"node"}, nil)
	usedDesc       = prometheus.NewDesc("rsa_node_used_bytes", "RAM of an RSA node that RAMDISKs fill.", []string{"node"}, nil)
	drainedDesc    = prometheus.NewDesc("rsa_node_drained", "1 when an administrator drained the RSA node.", []string{"node"}, nil)
	agentUpDesc    = prometheus.NewDesc("rsa_agent_up", "1 when the node's agent answered the daemon's last heartbeat (engine gluster).", []string{"node", "role"}, nil)
	agentSeenDesc  = prometheus.NewDesc("rsa_agent_last_seen_timestamp_seconds", "When the node's agent last answered (Unix time; 0: never).", []string{"node", "role"}, nil)
	agentStateDesc = prometheus.NewDesc("rsa_agent_state", "1 for the node's state as the heartbeat tells it: up; suspect (silent for less than cluster.down_after: no new jobs); down (lost).",
		[]string{"node", "role", "state"}, nil)
	agentUnpooledDesc = prometheus.NewDesc("rsa_agent_unpooled", "1 when the RSA node's glusterd is split from the trusted pool (a peer not \"Peer in Cluster\" or not connected), which keeps it out of new RAMDISKs though its agent answers; rsa nodes says why.", []string{"node", "role"}, nil)
	agentRebootsDesc  = prometheus.NewDesc("rsa_agent_reboots_total", "Reboots of the node (a new incarnation: its RAMDISK parts gone) the daemon saw since it started.", []string{"node", "role"}, nil)
	debtsDesc         = prometheus.NewDesc("rsa_debts", "What teardowns left on a node out of reach, not yet removed (each removed when the node's agent answers again): RAMDISK parts on an RSA node, RAMDISK mounts on a compute node. Only nodes owed anything have the series.", []string{"node"}, nil)
	debtBytesDesc     = prometheus.NewDesc("rsa_debt_bytes", "RAM of an RSA node that teardowns left held there (part of rsa_node_allocated_bytes).", []string{"node"}, nil)
	debtSinceDesc     = prometheus.NewDesc("rsa_debt_oldest_timestamp_seconds", "When a teardown left the node's oldest debt (Unix time).", []string{"node"}, nil)
	quarantinedDesc   = prometheus.NewDesc("rsa_quarantined_ramdisks", "RAMDISKs that hold data no job record knows of (a state directory restored from an older backup, say): RSA never destroys them; save what they hold, then rsa gc --discard ID.", nil, nil)
	certExpiryDesc    = prometheus.NewDesc(certExpiryName, "When a host's TLS certificate expires (Unix time): the daemon's own (role control), as it loaded it, and each agent's, as the daemon's last handshake with it verified it (engine gluster); role is the certificate's.", []string{"node", "role"}, nil)
)

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{jobsDesc, capacityDesc, allocDesc, usedDesc, drainedDesc, agentUpDesc, agentSeenDesc, agentStateDesc, agentRebootsDesc, agentUnpooledDesc, certExpiryDesc, debtsDesc, debtBytesDesc, debtSinceDesc, quarantinedDesc} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if jobs, err := g.src.Jobs(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
	} else {
		for _, j := range jobs {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(j.N), j.JobState, j.RSAState)
		}
	}
	for _, a := range g.src.Agents(ctx) {
		up, seen := 0.0, 0.0
		if a.Up {
			up = 1
		}
		if !a.Seen.IsZero() {
			seen = float64(a.Seen.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(agentUpDesc, prometheus.GaugeValue, up, a.Node, a.Role)
		ch <- prometheus.MustNewConstMetric(agentSeenDesc, prometheus.GaugeValue, seen, a.Node, a.Role)
		for _, s := range agentStates {
			v := 0.0
			if a.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(agentStateDesc, prometheus.GaugeValue, v, a.Node, a.Role, s)
		}
		ch <- prometheus.MustNewConstMetric(agentRebootsDesc, prometheus.CounterValue, float64(a.Rebooted), a.Node, a.Role)
		unpooled := 0.0
		if a.Unpooled {
			unpooled = 1
		}
		ch <- prometheus.MustNewConstMetric(agentUnpooledDesc, prometheus.GaugeValue, unpooled, a.Node, a.Role)
	}
	ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(g.src.Quarantined(ctx)))
	for _, c := range g.src.Certificates(ctx) {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(c.NotAfter.Unix()), c.Node, c.Role)
	}
	type owed struct {
		n, bytes int64
		since    time.Time
	}
	debts := map[string]*owed{}
	for _, d := range g.src.Debts(ctx) {
		o := debts[d.Node]
		if o == nil {
			o = &owed{since: d.Since}
			debts[d.Node] = o
		}
		o.n++
		o.bytes += d.Bytes
		if d.Since.Before(o.since) {
			o.since = d.Since
		}
	}
	for node, o := range debts {
		ch <- prometheus.MustNewConstMetric(debtsDesc, prometheus.GaugeValue, float64(o.n), node)
		ch <- prometheus.MustNewConstMetric(debtBytesDesc, prometheus.GaugeValue, float64(o.bytes), node)
		ch <- prometheus.MustNewConstMetric(debtSinceDesc, prometheus.GaugeValue, float64(o.since.UnixNano())/1e9, node)
	}
	nodes, err := g.src.Nodes(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(capacityDesc, err)
		return
	}
	for _, n := range nodes {
		drained := 0.0
		if n.Drained {
			drained = 1
		}
		ch <- prometheus.MustNewConstMetric(capacityDesc, prometheus.GaugeValue, float64(n.Capacity), n.Name)
		ch <- prometheus.MustNewConstMetric(allocDesc, prometheus.GaugeValue, float64(n.Allocated), n.Name)
		ch <- prometheus.MustNewConstMetric(usedDesc, prometheus.GaugeValue, float64(n.Used), n.Name)
		ch <- prometheus.MustNewConstMetric(drainedDesc, prometheus.GaugeValue, drained, n.Name)
	}
}
