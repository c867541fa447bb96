// Package dashboard is a read-only live web page of what rsa serve is doing:
// the active and recent jobs with their job-state, rsa-state and staging
// progress, each RSA node's RAM, and per job a timeline of its RAMDISK's
// phases against its run, drawn like the thesis' figures.
//
// It reads everything through a Source at each page view and holds no state
// of its own, so it can never be out of step with the daemon. It shows only
// what Job, Node and Event carry: the fields the private-data rule lets any
// user see (no paths, no errors, no logs), so it needs no authentication of
// its own. Everything is rendered on the server by html/template, which
// escapes every value; the page loads nothing from elsewhere.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/metrics"
)

// Job is what the dashboard shows of one job: only what the private-data rule lets anyone see.
type Job struct {
	ID                                   int64
	SlurmID                              string
	User                                 string
	JobState, RSAState                   string
	Phase                                string // stage-in, stage-out or ""
	Files, Bytes, TotalFiles, TotalBytes int64
	Rate                                 float64       // bytes/s of the current stage, 0 if none
	ETA                                  time.Duration // 0 if unknown
	Capacity, Used                       int64
	// Modes is how the job's RAM serves it, if not as files in one
	// shared RAMDISK: "input image", "private output", both, or "".
	Modes                      string
	Waiting                    string
	Created, Started, Finished time.Time // zero if not yet
	Done                       bool
}

// Node is one RSA node's RAM.
type Node struct {
	Name                      string
	Capacity, Allocated, Used int64
	State                     string // up, draining, drained, suspect, down
}

// Event is one state change of a job.
type Event struct {
	At                 time.Time
	JobState, RSAState string
}

// Source is the daemon as the dashboard reads it; every method is called per page view.
type Source interface {
	Jobs(ctx context.Context, recent int) ([]Job, error)   // active jobs and the `recent` newest ended ones
	Nodes(ctx context.Context) ([]Node, error)             // every RSA node
	Events(ctx context.Context, id int64) ([]Event, error) // a job's state changes, oldest first; error wrapping ErrNotFound for an unknown id
}

// ErrNotFound is what Source.Events wraps for a job it does not know.
var ErrNotFound = errors.New("no such job")

// recentJobs is how many ended jobs the front page lists below the active
// ones: enough to see what just happened, few enough for one screen.
const recentJobs = 20

// csp allows only the page's own inline style and refresh script, and the
// script's fetches of the page itself: a value that escaped html/template
// could still load or send nothing.
const csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'self'"

//go:embed *.html
var templateFS embed.FS

type handler struct {
	src   Source
	now   func() time.Time // the end of a running job's last interval
	index *template.Template
	job   *template.Template
}

// Handler serves the dashboard: GET / (the jobs and nodes) and GET
// /jobs/{id} (one job's timeline). Either answers ?partial=1 with just its
// content, which the page's script fetches every 2 s to stay live. Only
// requests that name this server are served (metrics.CheckHost, with
// hosts the site's other names for it besides its hostname): a page of
// another site cannot read the dashboard through DNS rebinding.
func Handler(src Source, hosts ...string) http.Handler { return newHandler(src, time.Now, hosts...) }

func newHandler(src Source, now func() time.Time, hosts ...string) http.Handler {
	h := &handler{src: src, now: now, index: parse("index.html"), job: parse("job.html")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.serveIndex)
	mux.HandleFunc("GET /jobs/{id}", h.serveJob)
	return secure(metrics.CheckHost(mux, hosts...))
}

// parse reads the layout and one page's content. The templates are part of
// the binary, so a broken one is a programming error and panics at start.
func parse(page string) *template.Template {
	return template.Must(template.New("layout.html").Funcs(funcs()).ParseFS(templateFS, "layout.html", page))
}

// secure sets the headers every answer carries, errors and 404s included.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store") // a live view: never show a stale copy
		next.ServeHTTP(w, r)
	})
}

func (h *handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	v, err := h.indexData(r.Context())
	if err != nil {
		http.Error(w, "dashboard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	render(w, r, h.index, v)
}

func (h *handler) serveJob(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	v, err := h.jobData(r.Context(), id)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, fmt.Sprintf("dashboard: job %d: %v", id, ErrNotFound), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "dashboard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	render(w, r, h.job, v)
}

// render executes the whole page, or only its content for ?partial=1, into
// a buffer first: a failing template must give a 500, not half a page.
func render(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	name := "layout.html"
	if r.URL.Query().Get("partial") == "1" {
		name = "content"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "dashboard: rendering: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
