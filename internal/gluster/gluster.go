// Package gluster drives GlusterFS 10 for RSA: the gluster CLI, which
// manages a trusted pool's volumes through the local glusterd, and the
// FUSE client mount of a volume.
//
// Every CLI call runs `gluster --mode=script --xml ...` without a shell
// and reads the answer from the XML (the command's exit status is 0 even
// when the operation failed). Calls through one CLI are serialised, and
// failures that go away by themselves (glusterd starting, another
// transaction holding the volume's lock) are retried for a while.
package gluster

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults of CLI.
const (
	DefaultBin   = "gluster"
	DefaultRetry = 30 * time.Second
)

// ErrNotFound is wrapped by the errors of operations on a volume that
// does not exist.
var ErrNotFound = errors.New("no such volume")

// ErrPeersDown is wrapped by the errors of transactions glusterd refused
// because members of the pool are down or out of its reach: a volume is
// deleted only through a pool whose every member answers.
var ErrPeersDown = errors.New("some peers of the trusted pool are down")

// CLI runs the gluster command line. Its zero value is ready to use; it
// must not be copied after first use.
type CLI struct {
	Bin   string        // the gluster program; "" means DefaultBin, found in PATH
	Log   *slog.Logger  // hears of retries; nil means slog.Default()
	Retry time.Duration // how long to retry transient failures; 0 means DefaultRetry

	// mu serialises calls: glusterd refuses a transaction on a volume
	// while another holds its lock, and one agent's calls would only
	// race each other.
	mu sync.Mutex
}

// Volume is a volume as glusterd describes it.
type Volume struct {
	Name    string
	Started bool
	Bricks  []string // HOST:DIR, in the volume's order
	Replica int      // copies of each file: 1 for a distribute volume
	Options map[string]string
}

// Error is a gluster command that failed: glusterd's refusal (Ret -1 and
// its message), or a CLI that gave no answer. It travels as JSON (an
// agent's answer carries it to the daemon).
type Error struct {
	Args  []string `json:"args"`  // the command's arguments after --mode=script --xml
	Ret   int      `json:"ret"`   // opRet
	Errno int      `json:"errno"` // opErrno
	Msg   string   `json:"msg"`   // opErrstr, or the CLI's own output
}

func (e *Error) Error() string {
	return fmt.Sprintf("gluster %s: %s", strings.Join(e.Args, " "), e.Msg)
}

// Is makes errors.Is(err, ErrNotFound) hold for glusterd's "does not
// exist", and errors.Is(err, ErrPeersDown) for its "Some of the peers are
// down".
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return strings.HasPrefix(e.Msg, "Volume ") && strings.Contains(e.Msg, "does not exist")
	case ErrPeersDown:
		return strings.Contains(e.Msg, "peers are down")
	}
	return false
}

// FailedOn is the member of the pool whose glusterd failed the
// transaction in its staging phase, as glusterd names it ("Staging failed
// on PEER. Error: ..."); ok is false when none did. glusterd answers a
// question about a volume for every member or for none, so the others are
// not the cause.
func (e *Error) FailedOn() (peer string, ok bool) {
	_, rest, ok := strings.Cut(e.Msg, "Staging failed on ")
	if !ok {
		return "", false
	}
	peer, _, ok = strings.Cut(rest, ". Error:")
	if !ok || peer == "" {
		return "", false
	}
	return peer, true
}

// transientMarks are the messages of failures that pass without anyone
// acting. The first two are glusterd's lock conflicts between concurrent
// transactions on a volume (another CLI, another pool member's glusterd);
// the last is the CLI finding no glusterd on its socket, as while glusterd
// starts (seen here: "Connection failed. Please check if gluster daemon is
// operational.", exit status 1, no XML).
var transientMarks = []string{
	"Another transaction is in progress",
	"Locking failed",
	"is in progress",
	"Please check if gluster daemon is operational",
}

// Transient reports whether err is a gluster failure that retrying may
// cure.
func Transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, m := range transientMarks {
		if strings.Contains(e.Msg, m) {
			return true
		}
	}
	return false
}

// cliOutput is the XML the CLI answers with.
type cliOutput struct {
	XMLName  xml.Name `xml:"cliOutput"`
	OpRet    int      `xml:"opRet"`
	OpErrno  int      `xml:"opErrno"`
	OpErrstr string   `xml:"opErrstr"`
	Volumes  []struct {
		Name         string   `xml:"name"`
		Status       int      `xml:"status"`
		ReplicaCount int      `xml:"replicaCount"`
		Bricks       []string `xml:"bricks>brick>name"`
		Options      []struct {
			Name  string `xml:"name"`
			Value string `xml:"value"`
		} `xml:"options>option"`
	} `xml:"volInfo>volumes>volume"`
	VolList []string `xml:"volList>volume"`
	Nodes   []struct {
		Hostname string `xml:"hostname"`
		Path     string `xml:"path"`
		Status   int    `xml:"status"`
	} `xml:"volStatus>volumes>volume>node"`
	Peers []struct {
		UUID      string   `xml:"uuid"`
		Hostname  string   `xml:"hostname"`
		Hostnames []string `xml:"hostnames>hostname"`
		Connected int      `xml:"connected"`
		State     int      `xml:"state"`
		StateStr  string   `xml:"stateStr"`
	} `xml:"peerStatus>peer"`
	ProfileBricks []profileBrick `xml:"volProfile>brick"`
}

// parse reads the CLI's answer to args. A refusal (opRet not 0) is an
// *Error.
func parse(args []string, out []byte) (*cliOutput, error) {
	var o cliOutput
	if err := xml.Unmarshal(out, &o); err != nil {
		return nil, &Error{Args: args, Ret: -1, Msg: "no answer from the CLI: " + shorten(strings.TrimSpace(string(out)))}
	}
	if o.OpRet != 0 {
		msg := strings.TrimSpace(o.OpErrstr)
		if msg == "" {
			msg = fmt.Sprintf("failed (opRet %d, opErrno %d) without saying why; see glusterd's log", o.OpRet, o.OpErrno)
		}
		return nil, &Error{Args: args, Ret: o.OpRet, Errno: o.OpErrno, Msg: msg}
	}
	return &o, nil
}

func shorten(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

// volumes converts the volumes of an info answer.
func (o *cliOutput) volumes() []Volume {
	out := make([]Volume, 0, len(o.Volumes))
	for _, v := range o.Volumes {
		vol := Volume{Name: v.Name, Started: v.Status == 1, Bricks: v.Bricks, Replica: max(v.ReplicaCount, 1), Options: map[string]string{}}
		if vol.Bricks == nil {
			vol.Bricks = []string{}
		}
		for _, opt := range v.Options {
			vol.Options[opt.Name] = opt.Value
		}
		out = append(out, vol)
	}
	return out
}

// run runs one gluster command, retrying transient failures with backoff
// until c.Retry has passed or ctx ends.
func (c *CLI) run(ctx context.Context, args ...string) (*cliOutput, error) {
	retry := c.Retry
	if retry <= 0 {
		retry = DefaultRetry
	}
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	deadline := time.Now().Add(retry)
	wait := 100 * time.Millisecond
	for {
		o, err := c.once(ctx, args)
		if err == nil || !Transient(err) || time.Now().Add(wait).After(deadline) {
			return o, err
		}
		log.Debug("gluster busy, retrying", "args", args, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// once runs the gluster command once.
func (c *CLI) once(ctx context.Context, args []string) (*cliOutput, error) {
	bin := c.Bin
	if bin == "" {
		bin = DefaultBin
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--mode=script", "--xml"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("gluster %s: %w", strings.Join(args, " "), ctx.Err())
	}
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("running %s: %w; install glusterfs-server or give its path (rsa agent --gluster)", bin, err)
	}
	if err != nil && !bytes.Contains(stdout.Bytes(), []byte("<cliOutput>")) {
		msg := strings.TrimSpace(stdout.String() + " " + stderr.String())
		return nil, &Error{Args: args, Ret: -1, Msg: fmt.Sprintf("%s (%v)", shorten(msg), err)}
	}
	return parse(args, stdout.Bytes())
}

// VolumeInfo describes volume name; ok is false if it does not exist.
func (c *CLI) VolumeInfo(ctx context.Context, name string) (v Volume, ok bool, err error) {
	if err := CheckName(name); err != nil {
		return Volume{}, false, err
	}
	o, err := c.run(ctx, "volume", "info", name)
	if errors.Is(err, ErrNotFound) {
		return Volume{}, false, nil
	}
	if err != nil {
		return Volume{}, false, err
	}
	vs := o.volumes()
	if len(vs) != 1 || vs[0].Name != name {
		return Volume{}, false, fmt.Errorf("gluster volume info %s answered with %d volumes, not the one asked for", name, len(vs))
	}
	return vs[0], true, nil
}

// Volumes describes every volume of the pool.
func (c *CLI) Volumes(ctx context.Context) ([]Volume, error) {
	o, err := c.run(ctx, "volume", "info")
	if err != nil {
		return nil, err
	}
	return o.volumes(), nil
}

// ListVolumes names the pool's volumes.
func (c *CLI) ListVolumes(ctx context.Context) ([]string, error) {
	o, err := c.run(ctx, "volume", "list")
	if err != nil {
		return nil, err
	}
	if o.VolList == nil {
		return []string{}, nil
	}
	return o.VolList, nil
}

// CreateArgs are the CLI arguments that create volume name of bricks:
// replica 0 or 1 distributes, 2 keeps two copies, each consecutive pair
// of bricks a replica set. Always with force: RSA's bricks may share a
// node in tests, and Gluster asks for force for replica bricks on one
// server.
func CreateArgs(name string, bricks []string, replica int) ([]string, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if len(bricks) == 0 {
		return nil, fmt.Errorf("volume %s: no bricks", name)
	}
	for _, b := range bricks {
		if err := CheckBrick(b); err != nil {
			return nil, err
		}
	}
	args := []string{"volume", "create", name}
	switch {
	case replica == 0 || replica == 1:
	case replica == 2 && len(bricks)%2 == 0:
		args = append(args, "replica", "2")
	default:
		return nil, fmt.Errorf("volume %s: replica %d over %d bricks: RSA makes replica 1 (distribute) or 2 over an even number of bricks", name, replica, len(bricks))
	}
	args = append(args, bricks...)
	return append(args, "force"), nil
}

// Create creates volume name of bricks (see CreateArgs). It fails if the
// volume exists.
func (c *CLI) Create(ctx context.Context, name string, bricks []string, replica int) error {
	args, err := CreateArgs(name, bricks, replica)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, args...)
	return err
}

// BrickState is one brick's process as glusterd sees it.
type BrickState struct {
	Brick  string `json:"brick"` // HOST:DIR
	Online bool   `json:"online"`
}

// BrickStatus reports the bricks of volume name whose state glusterd
// knows: a brick of a peer it has lost touch with is absent, and while
// it has not yet noticed (a cut link, until TCP gives up) the call
// waits; bound it with ctx.
func (c *CLI) BrickStatus(ctx context.Context, name string) ([]BrickState, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	o, err := c.run(ctx, "volume", "status", name)
	if err != nil {
		return nil, err
	}
	return o.bricks(), nil
}

// bricks converts the bricks of a status answer.
func (o *cliOutput) bricks() []BrickState {
	out := []BrickState{}
	for _, n := range o.Nodes {
		if !strings.HasPrefix(n.Path, "/") {
			continue // the self-heal daemon and such: not bricks
		}
		out = append(out, BrickState{Brick: n.Hostname + ":" + n.Path, Online: n.Status == 1})
	}
	return out
}

// Set sets options (key, value pairs) of volume name, all in one glusterd
// transaction: each transaction costs a round of the trusted pool.
func (c *CLI) Set(ctx context.Context, name string, opts ...[2]string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if len(opts) == 0 {
		return nil
	}
	args := []string{"volume", "set", name}
	for _, o := range opts {
		key, value := o[0], o[1]
		if key == "" || strings.Trim(key, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" || key[0] == '-' {
			return fmt.Errorf("%q is not a Gluster option name", shorten(key))
		}
		if value == "" || value[0] == '-' || strings.ContainsAny(value, " \t\n\r\x00") {
			return fmt.Errorf("option %s: %q is not a value RSA sets", key, shorten(value))
		}
		args = append(args, key, value)
	}
	_, err := c.run(ctx, args...)
	return err
}

// Start starts volume name; a started volume is left as it is.
func (c *CLI) Start(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	_, err := c.run(ctx, "volume", "start", name)
	if e := (*Error)(nil); errors.As(err, &e) && strings.Contains(e.Msg, "already started") {
		return nil
	}
	return err
}

// Stop stops volume name with force: its brick processes end, and its
// clients' I/O fails from then on. A volume not started, or absent, is
// stopped already.
func (c *CLI) Stop(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	_, err := c.run(ctx, "volume", "stop", name, "force")
	if e := (*Error)(nil); errors.As(err, &e) && (strings.Contains(e.Msg, "not in the started state") || errors.Is(err, ErrNotFound)) {
		return nil
	}
	return err
}

// Delete deletes volume name, which must be stopped. An absent volume is
// no error. The bricks' data stays on them: removing the bricks frees it.
func (c *CLI) Delete(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	_, err := c.run(ctx, "volume", "delete", name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// CheckName checks a volume name: what Gluster accepts (letters, digits,
// '-' and '_', at most 64), and never something the CLI or mount would
// read as an option.
func CheckName(name string) error {
	if name == "" || len(name) > 64 || name[0] == '-' || name[0] == '_' ||
		strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("%q is not a Gluster volume name: use letters, digits, '-' and '_', at most 64, beginning with a letter or digit", shorten(name))
	}
	return nil
}

// CheckHost checks a server's name: an IPv4 or IPv6 address written
// without ':' (so, IPv4), or a DNS name. Nothing else reaches a mount
// option or a brick: no ',', ':' or '/', which separate them, and no
// leading '-', which would be an option.
func CheckHost(host string) error {
	if net.ParseIP(host) != nil && !strings.Contains(host, ":") {
		return nil
	}
	if isDNSName(host) {
		return nil
	}
	return fmt.Errorf("%q is not an IPv4 address or a DNS name", shorten(host))
}

// isDNSName reports whether s is a DNS name: dot-separated labels of
// letters, digits and inner '-', 1 to 63 each, at most 253 in all.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return false
		}
	}
	return true
}

// CheckBrick checks a brick, HOST:DIR: HOST as CheckHost, DIR a clean
// absolute path below / without ',' or whitespace.
func CheckBrick(brick string) error {
	host, dir, ok := strings.Cut(brick, ":")
	if !ok {
		return fmt.Errorf("brick %q is not HOST:DIR", shorten(brick))
	}
	if err := CheckHost(host); err != nil {
		return fmt.Errorf("brick %q: %w", shorten(brick), err)
	}
	if !strings.HasPrefix(dir, "/") || dir == "/" || filepath.Clean(dir) != dir || strings.ContainsAny(dir, ", \t\n\r\x00") {
		return fmt.Errorf("brick %q: %q is not a clean absolute directory below /", shorten(brick), shorten(dir))
	}
	return nil
}
