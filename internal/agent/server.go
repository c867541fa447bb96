package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/version"
)

// Config is what an agent needs.
type Config struct {
	// Identity is the agent's certificate: its role (storage, compute or
	// both) says which operations it serves. A *pki.Live serves each
	// connection with the certificate, key, CA and revocation list its
	// files hold as the connection begins; its role and name stay those
	// it had at New.
	Identity pki.Source
	// BrickRoot holds one tmpfs per brick (default DefaultBrickRoot).
	BrickRoot string
	// VolumeRoot is where jobs' volumes are mounted on this node
	// (default DefaultVolumeRoot).
	VolumeRoot string
	// Log hears of every change and every refused request; nil means
	// slog.Default().
	Log *slog.Logger
	// Version is reported in status.
	Version string
	// Gluster is the gluster CLI a storage agent makes volumes with
	// (default gluster.DefaultBin, found in PATH).
	Gluster string
	// Self is the rsa binary a storage agent stages with (rsa copy, run
	// as the job's user); "" means the agent stages nothing.
	Self string
	// GlusterSSLDir is where Gluster reads this host's TLS files
	// (gluster.TLSFilesIn); "" means gluster.SSLDir's answer. No volume
	// is made or mounted while they are missing (gluster.CheckTLS).
	GlusterSSLDir string
}

// Server is an agent. It holds no state of its own beyond its
// configuration: what it reports it reads from the kernel on each request.
// Its methods may be called concurrently.
type Server struct {
	id         pki.Source
	tls        *tls.Config
	brickRoot  string
	volumeRoot string
	log        *slog.Logger
	version    string
	peer       peerVersion // the calling daemon's
	epochs     epochFence  // the newest lease epoch of the daemons that called
	bootID     string
	// incarnation names this life of the node: see Status.Incarnation.
	incarnation string
	started     time.Time
	gl          *gluster.CLI
	sslDir      string // Gluster's TLS files: Config.GlusterSSLDir
	// runner runs stages on a storage node; nil if the agent stages
	// nothing.
	runner *stage.Runner
	// metrics counts the requests and stages, served by ServeMetrics.
	metrics *metrics.Agent

	// mu serialises the operations that change mounts, so that two
	// requests for one volume (the daemon retrying while the first is
	// still at work) cannot both find it missing and both mount it.
	mu sync.Mutex
	// staging counts the stages running per volume (under mu): a staging
	// mount goes only when the last stage on it has ended, since several
	// stages of one job may run here one after another or at once (the
	// shares of a spread stage-in, and its finish).
	staging map[string]int
	// watch holds, per mount point, a descriptor on each private output
	// file system mounted here since its mount (under mu), for the flush
	// before its unmount to learn of every write-back failure
	// (access.UnbindPrivate). Lost with the agent: after a restart the
	// flush learns only of failures no one has seen.
	watch map[string]*os.File
	// vmu serialises the operations on Gluster volumes, for the same
	// reason; apart from mu, as they wait for glusterd for seconds.
	vmu sync.Mutex
}

// New checks cfg and prepares the agent's directories, created if
// missing: BrickRoot, root-owned 0700, if the role serves storage (no
// user passes there); VolumeRoot, root-owned 0711, if it serves compute
// (a job's user passes it, and the job's gate below it, to reach the
// job's volume by the path the control host gives it). It fails for an
// identity that cannot serve, such as the daemon's (role control). It
// logs a warning if the agent's certificate expires within
// pki.ExpiryWarning, or is revoked.
func New(cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	id := s.id.Current()
	WarnCertificate(s.log, id, time.Now())
	s.gl = &gluster.CLI{Bin: cfg.Gluster, Log: s.log}
	if s.sslDir = cfg.GlusterSSLDir; s.sslDir == "" {
		s.sslDir = gluster.SSLDir(context.Background())
	}
	for _, r := range []struct {
		flag, dir string
		kind      pki.Kind
		mode      os.FileMode
	}{{"brick root", s.brickRoot, pki.KindStorage, 0o700}, {"volume root", s.volumeRoot, pki.KindStatus, 0o711}} {
		if !filepath.IsAbs(r.dir) || filepath.Clean(r.dir) != r.dir || r.dir == "/" {
			return nil, fmt.Errorf("agent %s %q must be a clean absolute path below /", r.flag, r.dir)
		}
		if id.Role().Allows(r.kind) {
			if err := prepareRoot(r.flag, r.dir, r.mode); err != nil {
				return nil, err
			}
		}
	}
	if s.bootID, err = readBootID(); err != nil {
		return nil, err
	}
	if s.incarnation, err = readIncarnation(filepath.Join(filepath.Dir(s.brickRoot), "incarnation"), s.bootID); err != nil {
		return nil, err
	}
	if cfg.Self != "" && id.Role().Allows(pki.KindStorage) {
		// Staging children in cgroups of their own, named after what
		// tells this agent from another on the host's cgroup tree and
		// stays across its restarts: its node, its CA and its brick
		// root. The brick root alone is not enough where agents share
		// one cgroup tree from mount namespaces of their own (the
		// emulated clusters of the tests): a restarted agent would kill
		// every other's stages as its own leftovers.
		cert := id.Certificate()
		owner := fmt.Sprintf("rsa-agent %s %x %s", cert.Subject.CommonName, cert.AuthorityKeyId, s.brickRoot)
		cg, err := cgroup.Open(owner)
		if err != nil {
			return nil, err
		}
		if n, err := cg.KillAll(context.Background()); err != nil {
			return nil, fmt.Errorf("killing staging processes left by a previous agent: %w", err)
		} else if n > 0 {
			s.log.Warn("killed staging processes left by a previous agent", "cgroups", n)
		}
		s.runner = &stage.Runner{Self: cfg.Self, Cgroups: cg}
	}
	return s, nil
}

// newServer is the part of New that touches nothing on the node: cfg
// checked, with its defaults, and the metrics.
func newServer(cfg Config) (*Server, error) {
	if cfg.Identity == nil {
		return nil, errors.New("agent: no TLS identity")
	}
	tc, err := pki.ServerConfigFrom(cfg.Identity)
	if err != nil {
		return nil, err
	}
	id := cfg.Identity.Current()
	s := &Server{
		id:         cfg.Identity,
		tls:        tc,
		brickRoot:  cfg.BrickRoot,
		volumeRoot: cfg.VolumeRoot,
		log:        cfg.Log,
		version:    cfg.Version,
		started:    time.Now(),
	}
	if s.brickRoot == "" {
		s.brickRoot = DefaultBrickRoot
	}
	if s.volumeRoot == "" {
		s.volumeRoot = DefaultVolumeRoot
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.metrics = metrics.NewAgent(metricsSource{s}, metrics.AgentInfo{Version: s.version, Node: nodeName(id), Role: string(id.Role())})
	return s, nil
}

// WarnCertificate logs a warning if id's certificate expires within
// pki.ExpiryWarning of now, or is in id's own revocation list: the
// daemon would soon refuse, or refuses, the agent. Called as the agent
// starts and as it loads a new identity.
func WarnCertificate(log *slog.Logger, id *pki.Identity, now time.Time) {
	c := id.Certificate()
	if w := pki.ExpiresSoon(c, now); w != "" {
		log.Warn("the agent's "+w, "node", nodeName(id), "expires", c.NotAfter.UTC().Format(time.RFC3339), "serial", pki.FormatSerial(c.SerialNumber))
	}
	if err := id.Revoked(); err != nil {
		log.Warn("the agent's own certificate is in the revocation list it reads: rsa serve refuses it if it reads the same list; issue the node a new certificate", "node", nodeName(id), "err", err)
	}
}

// prepareRoot makes dir a root-owned directory of mode, not a symbolic link.
func prepareRoot(what, dir string, mode os.FileMode) error {
	// Parents as the system makes /run's directories: a job's user must
	// pass them on the way to the volume root.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("creating the agent's %s: %w", what, err)
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the agent's %s: %w", what, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("examining the agent's %s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the agent's %s %s is not a directory (a symbolic link?); give the real path", what, dir)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		return fmt.Errorf("securing the agent's %s: %w", what, err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("securing the agent's %s: %w", what, err)
	}
	return nil
}

// readBootID reads the kernel's boot_id, a random UUID drawn at boot.
func readBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("reading the boot id, which tells the daemon of a reboot: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readIncarnation returns the node's incarnation, kept in file (on /run,
// a tmpfs the node's reboot empties): the boot id and a random token
// drawn by the first agent of this boot. An agent restarting finds the
// file and keeps the incarnation; a fresh /run, with everything that was
// on it (bricks, mounts), draws a new one.
func readIncarnation(file, bootID string) (string, error) {
	if b, err := os.ReadFile(file); err == nil {
		if inc := strings.TrimSpace(string(b)); strings.HasPrefix(inc, bootID+"/") {
			return inc, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading the node's incarnation: %w", err)
	}
	token := make([]byte, 8)
	if _, err := rand.Read(token); err != nil {
		return "", err
	}
	inc := bootID + "/" + hex.EncodeToString(token)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", fmt.Errorf("writing the node's incarnation: %w", err)
	}
	if err := os.WriteFile(file, []byte(inc+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing the node's incarnation: %w", err)
	}
	return inc, nil
}

// The HTTP server's bounds. Every request is small and every operation a
// few system calls: a peer that takes longer is stuck or hostile, and holds
// a connection meanwhile.
const (
	maxRequestBody = 64 << 10
	readTimeout    = 30 * time.Second
	writeTimeout   = 2 * time.Minute
	idleTimeout    = 60 * time.Second
	shutdownGrace  = 10 * time.Second
)

// Handler serves the agent's operations. It expects requests over a TLS
// connection made with the agent's ServerConfig (Serve does that): each
// handler first authorises the caller's verified certificate for the
// operation's kind. Every request is counted and timed in the agent's
// metrics under its route's name (instrument).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// ops names each route for the metrics (op).
	ops := map[string]string{}
	handle := func(pattern, op string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, h)
		ops[pattern] = op
	}
	handle("GET /v1/status", "status", s.op(pki.KindStatus, func(*http.Request, string) (any, error) {
		return s.Status()
	}))
	handle("PUT /v1/bricks/{volume}", "make-brick", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		var spec BrickSpec
		if err := decode(r, &spec); err != nil {
			return nil, err
		}
		return s.MakeBrick(v, spec)
	}))
	handle("DELETE /v1/bricks/{volume}", "remove-brick", s.op(pki.KindStorage, func(_ *http.Request, v string) (any, error) {
		return struct{}{}, s.RemoveBrick(v)
	}))
	handle("PUT /v1/mounts/{volume}", "mount", s.op(pki.KindCompute, func(r *http.Request, v string) (any, error) {
		var req MountRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.Mount(r.Context(), v, req)
	}))
	handle("DELETE /v1/mounts/{volume}", "unmount", s.op(pki.KindCompute, func(r *http.Request, v string) (any, error) {
		detach, err := detachOf(r)
		if err != nil {
			return nil, err
		}
		return struct{}{}, s.Unmount(v, r.URL.Query().Get("target"), detach)
	}))
	handle("DELETE /v1/clients/{volume}", "release", s.op(pki.KindCompute, func(r *http.Request, v string) (any, error) {
		detach, err := detachOf(r)
		if err != nil {
			return nil, err
		}
		return struct{}{}, s.Release(v, detach)
	}))
	handle("GET /v1/volumes", "volumes", s.op(pki.KindStorage, func(r *http.Request, _ string) (any, error) {
		return s.Volumes(r.Context())
	}))
	handle("GET /v1/peers", "peers", s.op(pki.KindStorage, func(r *http.Request, _ string) (any, error) {
		return s.Peers(r.Context())
	}))
	handle("PUT /v1/volumes/{volume}", "make-volume", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		var spec VolumeSpec
		if err := decode(r, &spec); err != nil {
			return nil, err
		}
		return s.MakeVolume(r.Context(), v, spec)
	}))
	handle("DELETE /v1/volumes/{volume}", "remove-volume", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		return struct{}{}, s.RemoveVolume(r.Context(), v)
	}))
	handle("POST /v1/peers/reconnect", "reconnect-peers", s.op(pki.KindStorage, func(r *http.Request, _ string) (any, error) {
		return s.ReconnectPeers(r.Context())
	}))
	handle("GET /v1/volumes/{volume}/bricks", "brick-status", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		return s.BrickStatus(r.Context(), v)
	}))
	handle("GET /v1/volumes/{volume}/profile", "volume-profile", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		return s.VolumeProfile(r.Context(), v)
	}))
	handle("POST /v1/stage/{volume}", "stage", s.streamOp(pki.KindStorage, s.serveStage))
	handle("POST /v1/volumes/{volume}/seal", "seal-volume", s.op(pki.KindStorage, func(r *http.Request, v string) (any, error) {
		var spec SealSpec
		if err := decode(r, &spec); err != nil {
			return nil, err
		}
		return struct{}{}, s.SealVolume(r.Context(), v, spec)
	}))
	return s.instrument(mux, ops)
}

// detachOf reads a request's detach parameter: true or false, absent false.
func detachOf(r *http.Request) (bool, error) {
	d := r.URL.Query().Get("detach")
	if d == "" {
		return false, nil
	}
	detach, err := strconv.ParseBool(d)
	if err != nil {
		return false, failf(ErrInvalid, "detach=%q is not true or false", shorten(d))
	}
	return detach, nil
}

// op wraps an operation of kind: it authorises the caller first, then
// checks the volume name in the path (if the route has one), runs fn and
// writes its answer or error as JSON. Every failure is logged: refusals
// as warnings, failures the node should not have had as errors.
func (s *Server) op(kind pki.Kind, fn func(r *http.Request, volume string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := func() (any, error) {
			if err := s.id.Current().Authorize(r.TLS, kind); err != nil {
				return nil, failf(ErrForbidden, "%w", err)
			}
			if err := s.epochs.admit(s.log, r); err != nil {
				return nil, err
			}
			s.metrics.DaemonRequest()
			s.peer.note(s.log, r, s.version)
			v := r.PathValue("volume")
			if strings.Contains(r.Pattern, "{volume}") {
				if err := CheckVolume(v); err != nil {
					return nil, err
				}
			}
			return fn(r, v)
		}()
		if err != nil {
			level := slog.LevelWarn
			if code, _ := codeOf(err); code == codeInternal {
				level = slog.LevelError
			}
			s.log.Log(r.Context(), level, "agent request failed", "from", r.RemoteAddr, "method", r.Method, "path", shorten(r.URL.Path), "err", err)
		}
		w.Header().Set(version.Header, s.version)
		reply(w, out, err)
	}
}

// decode reads a request's JSON body into v: one object, at most
// maxRequestBody bytes, no keys v lacks (a typo in the daemon is an error,
// never silently ignored).
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return failf(ErrInvalid, "reading the request: %v", err)
	}
	if len(body) > maxRequestBody {
		return failf(ErrInvalid, "request body longer than %d bytes", maxRequestBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return failf(ErrInvalid, "bad request body: %v", err)
	}
	if dec.More() {
		return failf(ErrInvalid, "bad request body: more than one JSON value")
	}
	return nil
}

// errorBody is the JSON of a failed request.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Gluster is the gluster command's failure behind the error, if
	// any: the daemon tells glusterd's refusals apart by it
	// (gluster.ErrPeersDown, gluster.Error.FailedOn).
	Gluster *gluster.Error `json:"gluster,omitempty"`
}

// codeInternal is the code of every failure that is none of the kinds:
// the node could not do what it should have been able to (a mount system
// call failed).
const codeInternal = "internal"

// codeOf is the code and HTTP status an error is answered with.
func codeOf(err error) (string, int) {
	switch {
	case errors.Is(err, ErrInvalid):
		return "invalid", http.StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return "forbidden", http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return "not_found", http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return "conflict", http.StatusConflict
	case errors.Is(err, ErrBusy):
		return "busy", http.StatusLocked
	}
	return codeInternal, http.StatusInternalServerError
}

// kindOf is the kind of failure an answer's code names, nil for
// codeInternal and codes it does not know.
func kindOf(code string) error {
	for _, k := range []error{ErrInvalid, ErrForbidden, ErrNotFound, ErrConflict, ErrBusy} {
		if c, _ := codeOf(k); c == code {
			return k
		}
	}
	return nil
}

// reply writes v, or err with its code, as JSON.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code, status := codeOf(err)
		body := errorBody{Error: err.Error(), Code: code}
		if ge := (*gluster.Error)(nil); errors.As(err, &ge) {
			body.Gluster = ge
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
		return
	}
	json.NewEncoder(w).Encode(v)
}

// Serve serves the agent's operations on ln over TLS until ctx is done,
// then lets the requests under way finish (for up to 10 s) and returns nil.
// ln is a plain TCP listener (Listen's, which admits the control hosts'
// addresses alone): Serve adds the TLS layer, so every connection is
// mutual TLS 1.3 from the control daemon or fails in the handshake
// (logged as a warning, at most once a minute per address). A handshake
// must complete within handshakeDeadline, and connections still in their
// handshake are held to places of their own, apart from the daemon's
// authenticated ones (see tlsListener). Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    16 << 10,
		// Failed handshakes are the listener's to report (tlsListener);
		// what net/http has to say on a connection goes here.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context {
			return context.WithoutCancel(ctx)
		},
	}
	tl := newTLSListener(ln, s.tls, s.log)
	defer tl.wait()
	defer tl.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(tl) }()
	select {
	case err := <-done:
		return fmt.Errorf("agent stopped serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	if s.runner != nil {
		// The unit's cgroup outlives the agent (the Gluster clients stay
		// in it): it must take the next agent's process (see Release).
		// The stages went with their requests.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := s.runner.Cgroups.Release(rctx); err != nil {
			s.log.Warn("releasing the staging cgroups: the agent's next start under systemd may fail (status 219/CGROUP) until they are removed", "err", err)
		}
	}
	return nil
}

// Status reads the node's state from the kernel: RAM, bricks, mounts.
func (s *Server) Status() (*Status, error) {
	id := s.id.Current()
	st := &Status{
		Node:        nodeName(id),
		Role:        id.Role(),
		Version:     s.version,
		BootID:      s.bootID,
		Incarnation: s.incarnation,
		Started:     s.started,
		Bricks:      []Brick{},
		Mounts:      []Mount{},
	}
	var err error
	if st.MemTotal, st.MemAvailable, err = readMeminfo(); err != nil {
		return nil, err
	}
	ms, err := mount.List()
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	if st.Bricks, err = s.bricks(ms); err != nil {
		return nil, err
	}
	if st.Mounts, err = s.mounts(ms); err != nil {
		return nil, err
	}
	return st, nil
}

// nodeName is the node's name as its certificate gives it.
func nodeName(id *pki.Identity) string {
	c := id.Certificate()
	if len(c.DNSNames) > 0 {
		return c.DNSNames[0]
	}
	return c.Subject.CommonName
}

// readMeminfo reads MemTotal and MemAvailable, in bytes.
func readMeminfo() (total, avail int64, err error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("reading the node's RAM: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemTotal" && k != "MemAvailable" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading the node's RAM: /proc/meminfo says %s:%s", k, rest)
		}
		if k == "MemTotal" {
			total = n << 10
		} else {
			avail = n << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("reading the node's RAM: %w", err)
	}
	if total == 0 || avail == 0 {
		return 0, 0, errors.New("reading the node's RAM: /proc/meminfo lacks MemTotal or MemAvailable")
	}
	return total, avail, nil
}
