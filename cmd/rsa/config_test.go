package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.toml", "proportion = 64\n[[nodes]]\nname = \"rsa1\"\ncapacity = \"30G\"\n")
	bad := write("bad.toml", "proportion = 0\n")
	for _, c := range []struct {
		name       string
		args       []string
		env        []string
		wantStatus int
		wantOut    []string
		wantErr    string
	}{
		{"valid", []string{"--config", good, "config", "check"}, nil, 0, []string{good + ": ok", "rsa nodes:    1, 30.0G of RAM: rsa1 (local, 30.0G)", "scheduler:"}, ""},
		{"from RSA_CONFIG", []string{"config", "check"}, []string{"RSA_CONFIG=" + good}, 0, []string{good + ": ok"}, ""},
		{"an error names the key", []string{"--config", bad, "config", "check"}, nil, 1, nil, "proportion"},
		{"a file named but missing", []string{"--config", filepath.Join(dir, "none.toml"), "config", "check"}, nil, 1, nil, "name a readable file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, status := runRSA(t, c.env, c.args...)
			if status != c.wantStatus {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", status, c.wantStatus, out, errOut)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, c.wantErr) {
				t.Errorf("stderr lacks %q: %q", c.wantErr, errOut)
			}
		})
	}
}
