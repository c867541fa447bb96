// Package munge makes and checks MUNGE credentials, the identity service
// every Slurm cluster already runs: a credential says which uid and gid
// made it, on which host of the cluster's MUNGE realm, and carries a
// payload; munged decodes each credential once (replays are refused) and
// within its time to live only.
//
// It runs the munge and unmunge programs of the MUNGE package rather than
// linking libmunge: RSA stays one static Go binary, and a credential costs
// a process, which is cheap next to what a request to RSA does. Nothing a
// caller passes reaches a command line: payloads and credentials go
// through standard input.
package munge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cred is a decoded, valid credential.
type Cred struct {
	UID, GID uint32
	Host     string // the address of the host that made it
	Payload  []byte
}

// MaxCredential bounds a credential's length; RSA's payloads are short
// (a request line and a hash).
const MaxCredential = 4096

// credential is the text form munge writes: "MUNGE:" and base64.
var credential = regexp.MustCompile(`^MUNGE:[A-Za-z0-9+/]+={0,2}:?$`)

// Munge makes and checks credentials through the munged at Socket ("":
// munge's default socket).
type Munge struct {
	Socket string
	// Bin is the directory of munge and unmunge, "" for $PATH.
	Bin string
}

// run runs munge's program name with stdin, within 10 s.
func (m Munge) run(ctx context.Context, stdin io.Reader, name string, args ...string) (out []byte, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if m.Bin != "" {
		name = m.Bin + "/" + name
	}
	if m.Socket != "" {
		args = append(args, "--socket="+m.Socket)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var e bytes.Buffer
	cmd.Stderr = &e
	out, err = cmd.Output()
	return out, strings.TrimSpace(e.String()), err
}

// Encode makes a credential of the calling process's uid and gid carrying
// payload, which only root can decode (the daemon runs as root): no other
// service of the MUNGE realm, and no user holding the daemon's port, can
// make use of it. It is not idempotent: each call makes a new credential.
func (m Munge) Encode(ctx context.Context, payload []byte) (string, error) {
	out, stderr, err := m.run(ctx, bytes.NewReader(payload), "munge", "--restrict-uid=0")
	if err != nil {
		return "", fmt.Errorf("making a MUNGE credential (is munged running?): %w: %s", err, stderr)
	}
	cred := strings.TrimSpace(string(out))
	if !credential.MatchString(cred) || len(cred) > MaxCredential {
		return "", fmt.Errorf("munge wrote no credential")
	}
	return cred, nil
}

// ErrInvalid is wrapped by Decode for a credential that munged refuses
// (forged, expired, replayed, from another realm).
var ErrInvalid = errors.New("invalid MUNGE credential")

// Decode checks a credential with munged and returns who made it. A
// credential decodes once: a second Decode of it fails (replayed).
func (m Munge) Decode(ctx context.Context, cred string) (*Cred, error) {
	if len(cred) > MaxCredential || !credential.MatchString(cred) {
		return nil, fmt.Errorf("%w: not a credential", ErrInvalid)
	}
	out, stderr, err := m.run(ctx, strings.NewReader(cred), "unmunge", "--numeric")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			// unmunge's exit status is munge's error code.
			if why, ok := refusals[ee.ExitCode()]; ok {
				return nil, fmt.Errorf("%w: %s", ErrInvalid, why)
			}
		}
		return nil, fmt.Errorf("checking a MUNGE credential (is munged running?): %w: %s", err, stderr)
	}
	return parse(out)
}

// refusals are MUNGE's error codes (munge.h) for a credential munged
// decoded and refused, as opposed to munged not answering.
var refusals = map[int]string{
	8:  "bad credential",
	9:  "bad credential version",
	10: "bad cipher",
	11: "bad MAC",
	12: "bad compression",
	13: "bad realm",
	14: "invalid credential",
	15: "expired credential",
	16: "rewound credential (its clock is ahead)",
	17: "replayed credential",
	18: "unauthorized credential",
}

// parse reads unmunge --numeric's output: "KEY: value" lines, a blank
// line, the payload.
func parse(out []byte) (*Cred, error) {
	meta, payload, found := bytes.Cut(out, []byte("\n\n"))
	if !found {
		return nil, fmt.Errorf("unmunge's output has no payload")
	}
	c := &Cred{Payload: payload}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "STATUS":
			if v != "0" {
				return nil, fmt.Errorf("%w: status %s", ErrInvalid, v)
			}
		case "UID", "GID":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("unmunge gave %s %q", k, v)
			}
			if k == "UID" {
				c.UID = uint32(n)
			} else {
				c.GID = uint32(n)
			}
		case "ENCODE_HOST":
			c.Host, _, _ = strings.Cut(v, " ")
		}
		seen[k] = true
	}
	for _, k := range []string{"STATUS", "UID", "GID"} {
		if !seen[k] {
			return nil, fmt.Errorf("unmunge's output lacks %s", k)
		}
	}
	return c, nil
}
