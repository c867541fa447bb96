package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard in a real browser follows a job through its phases: the
// page, refreshing itself, shows stage-in, the job running, stage-out and
// the release as each is let go by the test; the job's timeline then has
// a bar for each. The screenshot of that timeline is the one in
// docs/dashboard.md.
//
// Not parallel: it runs alone, before the parallel tests start. Chromium
// and its helper processes are the heaviest load this package puts on a
// two-core box; beside four other tests they would stretch the page's
// refresh and the browser's start towards this test's bounds, and squeeze
// the seconds-long switch delays the other tests' jobs depend on.
func TestDashboard(t *testing.T) {
	chrome := chromiumPath(t)
	e := setup(t, "[metrics]\nlisten = \"127.0.0.1:0\"\n")
	base := "http://" + e.metricsAddr() + "/"

	in, out, ctl := e.mkdir("in"), e.mkdir("out"), e.mkdir("ctl")
	e.fill(in, 20, 4096)
	gateIn, gateJob, gateOut := filepath.Join(ctl, "stage-in"), filepath.Join(ctl, "job"), filepath.Join(ctl, "stage-out")
	until := func(gate string) string { return `while [ ! -e ` + gate + ` ]; do sleep 0.05; done` + "\n" }
	stageIn := e.script("in.sh", until(gateIn)+`cp -a "$2"/. "$1"/`+"\n")
	stageOut := e.script("out.sh", until(gateOut)+`cp -a "$1"/. "$2"/`+"\n")
	job := e.script("job.sh", inRAM+`ram "$1" || exit 3
`+until(gateJob)+`waitram "$2"; echo result > "$2/result"
`)
	b := e.runBG("--in", in, "--out", out, "--capacity", "64M", "--delay", "1",
		"--stage-in", stageIn, "--stage-out", stageOut, "--", job, in, out)

	served(t, base, http.StatusOK)
	served(t, base+"jobs/999", http.StatusNotFound)
	ctx := browser(t, chrome)
	run(t, ctx, "opening the dashboard", chromedp.Navigate(base))

	showsState(t, ctx, 1, "STAGING_IN")
	if user := text(t, ctx, "#job-1 .user"); user != e.user.Name {
		t.Errorf("job 1's user shows as %q, want %q", user, e.user.Name)
	}
	e.writeFile(gateIn, nil, 0o644)
	showsState(t, ctx, 1, "INUSE_IN", "INUSE_OUT")
	e.writeFile(gateJob, nil, 0o644)
	showsState(t, ctx, 1, "STAGING_OUT")
	if code := b.wait(t); code != 0 {
		t.Fatalf("rsa run exit %d: %s", code, b.errb.String())
	}
	e.writeFile(gateOut, nil, 0o644)
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("rsa wait: %v %s", err, stderr)
	}
	showsState(t, ctx, 1, "RELEASED")
	noPaths(t, ctx, e.home)

	run(t, ctx, "opening job 1's timeline", chromedp.Navigate(base+"jobs/1"))
	timelineBars(t, ctx, "stage-in", "stage-out", "job-run")
	// The screenshot in docs/ is renewed on demand only
	// (RSA_UPDATE_SCREENSHOT=1): a test run leaves the checkout as it was.
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	if os.Getenv("RSA_UPDATE_SCREENSHOT") == "1" {
		shot = filepath.Join("..", "..", "docs", "dashboard.png")
	}
	screenshot(t, ctx, shot)
	noPaths(t, ctx, e.home)
	if got, err := os.ReadFile(filepath.Join(out, "result")); err != nil || string(got) != "result\n" {
		t.Errorf("output on disk: %q, %v", got, err)
	}
	e.noLeaks()
}

// chromiumPath is Debian's chromium. Without it the test skips, except
// under CI=true, where a skipped test would hide a gap.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err == nil {
		return p
	}
	msg := "chromium is not installed: make deps installs it (Debian's chromium package)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// served fails the test unless url answers with status: before a browser
// is started, so a daemon that does not serve the dashboard is named as
// the cause, not a timeout.
func served(t *testing.T, url string, status int) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %s, want %d: does the daemon serve the dashboard at / of its [metrics] listen address?\n%s",
			url, resp.Status, status, body)
	}
	if resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET %s: no Content-Security-Policy", url)
	}
}

// browser starts a headless chromium of the test's own, with a fresh
// profile, ended (and waited for) when the test ends, failed or not.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	// Not t.TempDir: chromium's helper processes may still write into
	// the profile for a moment after the browser is gone, and TempDir's
	// removal then fails the test. Removed below, once they are gone.
	dir, err := os.MkdirTemp("", "rsa-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile")
	logf, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The flags that work without a network, as root, with no display.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
		chromedp.CombinedOutput(logf),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // kills chromium if it is still there, and waits for it
		logf.Close()
		if t.Failed() {
			t.Logf("chromium's output (without its D-Bus complaints):\n%s", chromiumLog(logf.Name()))
		}
		endHelpers(t, profile)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing chromium's profile: %v", err)
		}
	})
	// The first Run starts the browser, which lives as long as ctx: it
	// must not be given a context with a timeout.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// endHelpers ends the processes of the chromium this test started that
// outlive the browser (they name its profile on their command line), and
// waits until none is left, for at most 10 s.
func endHelpers(t *testing.T, profile string) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, _ := exec.Command("pgrep", "-f", "--", "--user-data-dir="+profile).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("chromium processes %v outlived the test", pids)
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// chromiumLog is chromium's output less the lines about the D-Bus it has
// no use for here, which would bury anything that matters.
func chromiumLog(path string) string {
	b, _ := os.ReadFile(path)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "dbus/") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// run runs actions in the browser, each batch bounded in time.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// showsState waits up to a step for the page, refreshing itself, to show
// job id in one of the rsa-states want.
func showsState(t *testing.T, ctx context.Context, id int, want ...string) {
	t.Helper()
	js := fmt.Sprintf(`(function () { var r = document.getElementById("job-%d"); return r ? r.dataset.rsaState : ""; })()`, id)
	var seen []string
	deadline := time.Now().Add(step)
	for {
		var s string
		run(t, ctx, "reading job's row", chromedp.Evaluate(js, &s))
		if slices.Contains(want, s) {
			return
		}
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if time.Now().After(deadline) {
			var page string
			run(t, ctx, "reading the page", chromedp.Evaluate(`document.body ? document.body.innerText : ""`, &page))
			t.Fatalf("the dashboard did not show job %d in %v within %v; it showed %q; the page reads:\n%s", id, want, step, seen, page)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// text is the text of the first element matching sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, "reading "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// noPaths fails if the page shows anything below dir: the dashboard shows
// only what any user may see of a job, never its paths.
func noPaths(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	var page string
	run(t, ctx, "reading the page", chromedp.OuterHTML("html", &page))
	if strings.Contains(page, dir) {
		t.Errorf("the dashboard shows a job's path (%s):\n%s", dir, page)
	}
}

// screenshot writes a full-page PNG of what the browser shows to path.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	var png []byte
	run(t, ctx, "taking a screenshot", chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("writing the screenshot: %v", err)
	}
}

// svgBar is one bar of a job's timeline as the browser lays it out.
type svgBar struct {
	Phase string  `json:"phase"`
	Width float64 `json:"width"`
	Title string  `json:"title"`
}

// timelineBars checks the timeline has a bar of each phase, drawn with a
// positive width and a title giving its start and duration.
func timelineBars(t *testing.T, ctx context.Context, phases ...string) {
	t.Helper()
	var bars []svgBar
	run(t, ctx, "reading the timeline", chromedp.Evaluate(`Array.from(document.querySelectorAll("svg rect[data-phase]")).map(function (r) {
		var title = r.querySelector("title");
		return {phase: r.dataset.phase, width: r.getBoundingClientRect().width, title: title ? title.textContent : ""};
	})`, &bars))
	for _, p := range phases {
		i := slices.IndexFunc(bars, func(b svgBar) bool { return b.Phase == p })
		switch {
		case i < 0:
			t.Errorf("the timeline has no %s bar; it has %+v", p, bars)
		case bars[i].Width <= 0:
			t.Errorf("the %s bar is %v px wide", p, bars[i].Width)
		case !strings.Contains(bars[i].Title, "from") || !strings.Contains(bars[i].Title, "for"):
			t.Errorf("the %s bar's title %q does not give its start and duration", p, bars[i].Title)
		}
	}
}
