package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// What rsa agent tells Prometheus of its own node (rsa agent
// --metrics-listen), apart from what rsa serve says of every agent: the
// requests the daemon sent it, the bricks and mounts it holds, the stages
// it runs, when the daemon last reached it and when its certificate
// expires. As the daemon's, these series carry no user data: no volume
// name (which is a job id), no path, no user; an operation is named by its
// route, never by the request's path.

// OpOther is the op of a request that matched none of the agent's routes.
const OpOther = "other"

// Stage results, as rsa_agent_stages_total names them.
const (
	StageOK     = "ok"
	StageFailed = "failed"
)

// AgentInfo names the agent whose metrics these are.
type AgentInfo struct {
	// Version is the agent's (internal/version).
	Version string
	// Node and Role are its certificate's name and role (storage,
	// compute or both).
	Node, Role string
}

// BrickUse is one brick on an RSA node, without its name: its tmpfs'
// size and fill as statfs reports them.
type BrickUse struct {
	Size, Used, Inodes, InodesUsed int64
	// Problem: the brick is not as the agent makes it (something
	// mounted over it, a missing flag).
	Problem bool
}

// AgentHoldings is what a node holds for jobs, as its agent reads it from
// the kernel.
type AgentHoldings struct {
	Bricks []BrickUse
	// Mounts are the jobs' volumes mounted on the node (each a RAMDISK:
	// a job's, or one being staged), Binds the job directories they are
	// bound at.
	Mounts, Binds int
}

// AgentSource is what a scrape reads from the agent. Both methods are
// called at every scrape, concurrently with the agent's work, and must be
// cheap.
type AgentSource interface {
	// Holdings reads the bricks and mounts from the kernel.
	Holdings(ctx context.Context) (AgentHoldings, error)
	// Certificate is the agent's certificate as it serves with it now
	// (a renewed one as soon as it is loaded).
	Certificate(ctx context.Context) Certificate
}

// Agent records and serves an agent's metrics.
type Agent struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	lastDaemon prometheus.Gauge
	running    *prometheus.GaugeVec
	stages     *prometheus.CounterVec
}

// NewAgent makes the metrics of the agent info names, reading its node's
// gauges from src.
func NewAgent(src AgentSource, info AgentInfo) *Agent {
	a := &Agent{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rsa_agent_requests_total",
			Help: "Requests the agent answered, by operation (op: the route's name, \"other\" for a request that matched none) and HTTP status (code). Refused ones count too (403: an operation the agent's role does not serve, or a caller that is not the control daemon); a connection whose TLS handshake fails makes no request.",
		}, []string{"op", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rsa_agent_request_duration_seconds",
			Help: "Time the agent took to answer each request, by operation (op); a stage's is the whole stage.",
			// From a status (a millisecond) to a stage of an hour.
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"op"}),
		lastDaemon: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rsa_agent_last_daemon_request_timestamp_seconds",
			Help: "When the control daemon last reached this agent: its last request that passed the certificate check (Unix time; 0: none since the agent started).",
		}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rsa_agent_stages_running",
			Help: "Stages this node runs now for jobs, by phase (stage-in, stage-out), their mount included.",
		}, []string{"phase"}),
		stages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rsa_agent_stages_total",
			Help: "Stages this node ran since the agent started, by phase (stage-in, stage-out) and result (ok, failed).",
		}, []string{"phase", "result"}),
	}
	// Every phase and result exists from the start, at 0: an alert on
	// increase() needs the series before the first stage.
	for _, p := range []string{StageIn, StageOut} {
		a.running.WithLabelValues(p)
		for _, r := range []string{StageOK, StageFailed} {
			a.stages.WithLabelValues(p, r)
		}
	}
	infoGauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rsa_agent_info", Help: "The agent's version, and its certificate's role and node name.",
		ConstLabels: prometheus.Labels{"version": info.Version, "role": info.Role, "node": info.Node},
	})
	infoGauge.Set(1)
	// No Go collector: the agent's garbage collector is of no use to an
	// administrator. The process' (restarts, memory, descriptors) is.
	a.reg.MustRegister(a.requests, a.duration, a.lastDaemon, a.running, a.stages, infoGauge, &agentGauges{src: src},
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return a
}

// ObserveRequest records one request the agent answered: its operation,
// one of a fixed set of route names (never a path: the agent's paths hold
// volume names), its HTTP status and how long it took.
func (a *Agent) ObserveRequest(op string, code int, took time.Duration) {
	a.requests.WithLabelValues(op, strconv.Itoa(code)).Inc()
	a.duration.WithLabelValues(op).Observe(took.Seconds())
}

// DaemonRequest records that the control daemon reached the agent now.
func (a *Agent) DaemonRequest() { a.lastDaemon.SetToCurrentTime() }

// StageStarted records a stage of phase (StageIn or StageOut) as running,
// and returns the function to call once when it has ended, ok or not.
func (a *Agent) StageStarted(phase string) (ended func(ok bool)) {
	if phase != StageIn && phase != StageOut {
		// The agent refuses any other phase before it starts; a stage
		// counted under another name would make a series of it.
		return func(bool) {}
	}
	a.running.WithLabelValues(phase).Inc()
	return func(ok bool) {
		a.running.WithLabelValues(phase).Dec()
		result := StageFailed
		if ok {
			result = StageOK
		}
		a.stages.WithLabelValues(phase, result).Inc()
	}
}

// Handler serves the metrics in Prometheus' text format to the requests
// that name this server (CheckHost, with hosts the site's other names for
// it besides its hostname).
func (a *Agent) Handler(hosts ...string) http.Handler {
	return CheckHost(promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Timeout: 10 * time.Second}), hosts...)
}

// agentGauges reads the node's bricks, mounts and certificate from the
// agent at each scrape.
type agentGauges struct{ src AgentSource }

var (
	agentBricksDesc         = prometheus.NewDesc("rsa_agent_bricks", "Bricks on this RSA node (one per job's RAMDISK part here).", nil, nil)
	agentBrickProblemsDesc  = prometheus.NewDesc("rsa_agent_brick_problems", "Bricks on this RSA node that are not as the agent makes them (something mounted over one, a missing flag): the agent's status says why.", nil, nil)
	agentBrickSizeDesc      = prometheus.NewDesc("rsa_agent_bricks_size_bytes", "RAM the bricks on this RSA node may fill: their tmpfs' sizes, summed.", nil, nil)
	agentBrickUsedDesc      = prometheus.NewDesc("rsa_agent_bricks_used_bytes", "RAM the bricks on this RSA node fill, summed.", nil, nil)
	agentBrickInodesDesc    = prometheus.NewDesc("rsa_agent_bricks_inodes", "Inodes the bricks on this RSA node may hold, summed.", nil, nil)
	agentBrickInodesUseDesc = prometheus.NewDesc("rsa_agent_bricks_inodes_used", "Inodes the bricks on this RSA node hold, summed.", nil, nil)
	agentMountsDesc         = prometheus.NewDesc("rsa_agent_mounts", "Jobs' volumes (RAMDISKs) mounted on this node: a job's on its compute nodes, one being staged on an RSA node.", nil, nil)
	agentBindsDesc          = prometheus.NewDesc("rsa_agent_mount_binds", "Job directories on this node the jobs' volumes are bound at (input and output paths).", nil, nil)
	// The daemon's series of the same name and labels, so that one
	// alert rule covers the certificates of both.
	agentCertExpiryDesc = prometheus.NewDesc(certExpiryName, "When this agent's TLS certificate expires (Unix time): the one it serves with now, a renewed one as soon as it is loaded; role is the certificate's.", []string{"node", "role"}, nil)
)

func (g *agentGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{agentBricksDesc, agentBrickProblemsDesc, agentBrickSizeDesc, agentBrickUsedDesc, agentBrickInodesDesc,
		agentBrickInodesUseDesc, agentMountsDesc, agentBindsDesc, agentCertExpiryDesc} {
		ch <- d
	}
}

func (g *agentGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := g.src.Certificate(ctx)
	ch <- prometheus.MustNewConstMetric(agentCertExpiryDesc, prometheus.GaugeValue, float64(c.NotAfter.Unix()), c.Node, c.Role)
	h, err := g.src.Holdings(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(agentBricksDesc, err)
		return
	}
	var problems, size, used, inodes, inodesUsed int64
	for _, b := range h.Bricks {
		if b.Problem {
			problems++
		}
		size += b.Size
		used += b.Used
		inodes += b.Inodes
		inodesUsed += b.InodesUsed
	}
	for _, v := range []struct {
		d *prometheus.Desc
		n int64
	}{{agentBricksDesc, int64(len(h.Bricks))}, {agentBrickProblemsDesc, problems}, {agentBrickSizeDesc, size}, {agentBrickUsedDesc, used},
		{agentBrickInodesDesc, inodes}, {agentBrickInodesUseDesc, inodesUsed}, {agentMountsDesc, int64(h.Mounts)}, {agentBindsDesc, int64(h.Binds)}} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.GaugeValue, float64(v.n))
	}
}
