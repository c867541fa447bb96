package api

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// luaStub answers burst_buffer.lua's hooks as the daemon would and keeps
// what it was asked.
type luaStub struct {
	Service
	mu  sync.Mutex
	got []HookRequest
}

func (s *luaStub) Hook(_ context.Context, _ Peer, r HookRequest) (*HookReply, error) {
	s.mu.Lock()
	s.got = append(s.got, r)
	s.mu.Unlock()
	switch {
	case r.Hook == "pools":
		return &HookReply{Verdict: Success, Message: `{"pools":[{"id":"rsa","quantity":4096,"granularity":1048576,"free":4096}]}`}, nil
	case r.Hook == "paths" && len(r.Args) > 0 && r.Args[0] == "66":
		// A record from before control characters were refused: the
		// daemon must not pass it on, whatever the Lua checks after it.
		return &HookReply{Verdict: Success, Env: []string{"RSA_DATA_IN=/home/u/x\nBASH_ENV=/tmp/evil.sh"}}, nil
	case r.Hook == "paths":
		return &HookReply{Verdict: Success, Env: []string{"RSA_RAMDISK=/run/rsa/ramdisk/7/ram", "RSA_DATA_IN=/home/u/in dir é"}}, nil
	case r.Hook == "job_process" && strings.Contains(r.Script, "#RSA_DATA_INN"):
		return &HookReply{Verdict: Failure, Message: `RSA: job script line 2 "#RSA_DATA_INN=/x": unknown variable`}, nil
	}
	return &HookReply{Verdict: Success}, nil
}

func (s *luaStub) requests() []HookRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]HookRequest(nil), s.got...)
}

// burstBufferLua is contrib/slurm/burst_buffer.lua with its RSA and
// RSA_SOCKET lines set as slurm-up and a site would set them.
func burstBufferLua(t *testing.T, rsa, socket string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "slurm", "burst_buffer.lua"))
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^local RSA = .*$`).ReplaceAllLiteralString(string(b), `local RSA = "`+rsa+`"`)
	s = regexp.MustCompile(`(?m)^local RSA_SOCKET = .*$`).ReplaceAllLiteralString(s, `local RSA_SOCKET = "`+socket+`"`)
	path := filepath.Join(t.TempDir(), "burst_buffer.lua")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runLua loads lua into Lua 5.1 with a stand-in for Slurm's table, runs
// calls and returns what it printed.
func runLua(t *testing.T, lua, calls string) string {
	t.Helper()
	bin, err := exec.LookPath("lua5.1")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("lua5.1 is missing: make deps installs it")
		}
		t.Skip("lua5.1 is missing (make deps)")
	}
	prog := "slurm = {SUCCESS = 0, ERROR = -1}\ndofile(" + luaQuote(lua) + ")\n" +
		"local function show(rc, msg) print(rc .. '|' .. tostring(msg)) end\n" + calls
	out, err := exec.Command(bin, "-e", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("lua5.1: %v\n%s", err, out)
	}
	return string(out)
}

func luaQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// burst_buffer.lua's hooks inside slurmctld (job_process, paths, pools)
// ask over the socket without a process when lua-socket is there, send
// the script as it is, write only checked RSA_* lines into the path
// file, and fall back to rsa slurm-bb when the socket does not answer.
func TestBurstBufferLuaOverTheSocket(t *testing.T) {
	testutil.RequireRoot(t) // the socket's directory is root's
	if err := exec.Command("lua5.1", "-e", `require("socket.unix")`).Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lua-socket is missing (%v): make deps installs it", err)
		}
		t.Skip("lua-socket is missing (make deps)")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "rsa.sock")
	l, err := ListenConfig{Limits: Limits{PerUser: 4}}.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	stub := &luaStub{}
	srv := NewServer(stub, slog.New(slog.DiscardHandler))
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	// rsa itself, for the fallback: it says where it was called from.
	rsa := filepath.Join(dir, "rsa")
	if err := os.WriteFile(rsa, []byte("#!/bin/sh\necho SUCCESS\necho \"by process: $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/bash\n#RSA_DATA_IN=/home/u/in \"quoted\" \\back\ttab é\n#RSA_DELAY=1m\nsrun app\n"
	scriptPath := filepath.Join(dir, "script")
	bad := filepath.Join(dir, "bad-script")
	plain := filepath.Join(dir, "plain-script") // not RSA's: answered in the Lua
	pathFile, badPathFile := filepath.Join(dir, "path_file"), filepath.Join(dir, "bad_path_file")
	for p, s := range map[string]string{scriptPath: script, bad: "#!/bin/sh\n#RSA_DATA_INN=/x\n", plain: "#!/bin/sh\n#SBATCH -N 2\nsrun app\n", pathFile: "", badPathFile: ""} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	lua := burstBufferLua(t, rsa, sock)
	out := runLua(t, lua, `
show(slurm_bb_job_process(`+luaQuote(scriptPath)+`, 1000, 1000))
show(slurm_bb_job_process(`+luaQuote(bad)+`, 1000, 1000))
show(slurm_bb_job_process(`+luaQuote(plain)+`, 1000, 1000))
show(slurm_bb_pools())
show(slurm_bb_paths(7, "x", `+luaQuote(pathFile)+`, 1000, 1000))
show(slurm_bb_paths(66, "x", `+luaQuote(badPathFile)+`, 1000, 1000))
show(slurm_bb_paths("7;rm", "x", `+luaQuote(pathFile)+`, 1000, 1000))
`)
	want := []string{
		"0|",
		`-1|RSA: job script line 2 "#RSA_DATA_INN=/x": unknown variable`,
		"0|",
		`0|{"pools":[{"id":"rsa","quantity":4096,"granularity":1048576,"free":4096}]}`,
		"0|",
		"-1|rsa: paths: refusing to write",
		`-1|rsa: refusing unexpected argument "7;rm"`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("the Lua printed:\n%s\nwant %d lines", out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("call %d: %q, want %q...", i+1, lines[i], w)
		}
	}

	got := stub.requests()
	if len(got) != 5 {
		t.Fatalf("the daemon got %d requests, want 5 (the bad argument never leaves the Lua, a script without RSA lines is answered there): %+v", len(got), got)
	}
	for _, r := range got {
		if r.Via != ViaLuaSocket {
			t.Errorf("%s came via %q, want %q", r.Hook, r.Via, ViaLuaSocket)
		}
	}
	if got[0].Script != script {
		t.Errorf("the job script arrived as %q, want %q", got[0].Script, script)
	}
	if a := strings.Join(got[0].Args, " "); a != scriptPath+" 1000 1000" {
		t.Errorf("job_process args %q", a)
	}
	if a := strings.Join(got[3].Args, " "); a != "7 1000 1000 "+pathFile {
		t.Errorf("paths args %q", a)
	}
	if b, _ := os.ReadFile(pathFile); string(b) != "RSA_RAMDISK=/run/rsa/ramdisk/7/ram\nRSA_DATA_IN=/home/u/in dir é\n" {
		t.Errorf("path file: %q", b)
	}
	if b, _ := os.ReadFile(badPathFile); len(b) != 0 {
		t.Errorf("a refused environment reached the path file: %q", b)
	}

	// No daemon on the socket: rsa slurm-bb answers, with the same
	// arguments.
	lua = burstBufferLua(t, rsa, filepath.Join(dir, "nobody.sock"))
	out = runLua(t, lua, `show(slurm_bb_job_process(`+luaQuote(scriptPath)+`, 1000, 1000))
show(slurm_bb_pools())`)
	if want := "0|by process: --config /etc/rsa/rsa.toml slurm-bb -- job_process " + scriptPath + " 1000 1000\n0|by process: --config /etc/rsa/rsa.toml slurm-bb -- pools\n"; out != want {
		t.Errorf("without the socket the Lua printed %q, want %q", out, want)
	}
}
