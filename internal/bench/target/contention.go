package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/contention"
)

// SharedContention controls the create contention of shared@1g's brick
// (contention.Model, through the shim its glusterd and bricks load): the
// thesis' mechanism, where delay-gen (SetSharedLatency) adds one constant
// to every create.
type SharedContention struct {
	c    Config
	conf string // the shim's model file (contention.EnvConf)
	m    contention.Model
}

// SetSharedContention makes every create of a file on shared@1g's brick
// cost what m says: serialised per directory, Local alone, up to
// Local+Revoke as more client hosts contend. The first time it builds the
// shim and restarts shared@1g's glusterd and its volume with the shim
// loaded (the clients reconnect, as after SetSharedLatency); after that a
// new model is a file the shim reads at its next create. Delay-gen is
// reset, so that the two never add up.
func SetSharedContention(ctx context.Context, c Config, m contention.Model) (*SharedContention, error) {
	c = c.withDefaults()
	l := c.shared()
	dir := filepath.Join(l.base, "contention")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &SharedContention{c: c, conf: filepath.Join(dir, "model"), m: m}
	s.m.Root = filepath.Join(l.base, "brick", "b")
	if err := s.m.Write(s.conf); err != nil {
		return nil, err
	}
	loaded, err := l.glusterdHas(contention.EnvConf + "=" + s.conf)
	if err != nil {
		return nil, err
	}
	if loaded {
		return s, SetSharedLatency(ctx, c, 0)
	}
	lib, err := contention.Build(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := l.restartWith(ctx, "LD_PRELOAD="+lib, contention.EnvConf+"="+s.conf); err != nil {
		return nil, fmt.Errorf("shared@1g with create contention: %w", err)
	}
	if err := SetSharedLatency(ctx, c, 0); err != nil {
		return nil, err
	}
	// The brick must carry the shim: a glusterd that cleaned its
	// children's environment would leave the model without effect.
	if ok, err := l.bricksHave(contention.EnvConf + "=" + s.conf); err != nil || !ok {
		return nil, fmt.Errorf("shared@1g's brick process did not inherit the contention shim from glusterd (%v): the model would have no effect", err)
	}
	return s, nil
}

// Begin starts a new count of creates (the shim zeroes its counters when
// it reads the model's next generation).
func (s *SharedContention) Begin(context.Context) error {
	s.m.Generation++
	return s.m.Write(s.conf)
}

// Stats is the shim's count of creates since Begin. The shim writes it
// after each create it delays, so a count is whole once the creates are.
func (s *SharedContention) Stats() (contention.Stats, error) {
	st, err := contention.ReadStats(s.conf)
	if err != nil {
		return st, err
	}
	if st.Creates > 0 && st.Generation != s.m.Generation {
		return contention.Stats{}, fmt.Errorf("shared@1g's contention counts are of generation %d, not %d: the shim has not read the model since Begin", st.Generation, s.m.Generation)
	}
	return st, nil
}

// Off leaves the shim loaded with no model: creates cost nothing extra.
func (s *SharedContention) Off() error { return contention.Disable(s.conf) }

// glusterdHas reports whether the server's glusterd runs with env (a
// NAME=VALUE) in its environment.
func (l sharedLayout) glusterdHas(env string) (bool, error) {
	pid, err := l.glusterdPID()
	if err != nil {
		return false, err
	}
	return environHas(pid, env)
}

// bricksHave reports whether shared@1g's brick processes (glusterfsd in
// the server's network namespace) have env in their environment.
func (l sharedLayout) bricksHave(env string) (bool, error) {
	pids, err := l.processes("glusterfsd")
	if err != nil {
		return false, err
	}
	if len(pids) == 0 {
		return false, errors.New("no brick process")
	}
	for _, p := range pids {
		if ok, err := environHas(p, env); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (l sharedLayout) glusterdPID() (int, error) {
	pids, err := l.processes("glusterd")
	if err != nil {
		return 0, err
	}
	if len(pids) != 1 {
		return 0, fmt.Errorf("shared@1g: %d glusterd processes in its namespace, want 1", len(pids))
	}
	return pids[0], nil
}

// processes are the pids of the processes named comm in the server's
// network namespace.
func (l sharedLayout) processes(comm string) ([]int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+sharedNetns, &want); err != nil {
		return nil, fmt.Errorf("shared@1g's network namespace: %w", err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func environHas(pid int, env string) (bool, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false, err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if string(kv) == env {
			return true, nil
		}
	}
	return false, nil
}

// restartWith stops the volume and the server's glusterd, starts glusterd
// again with env added to its environment (its bricks inherit it), and
// starts the volume.
func (l sharedLayout) restartWith(ctx context.Context, env ...string) error {
	gl := func(args ...string) error {
		_, err := l.inServer(ctx, append([]string{"gluster", "--mode=script", "volume"}, args...)...)
		return err
	}
	if err := gl("stop", sharedVol); err != nil {
		return err
	}
	pid, err := l.glusterdPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping glusterd (pid %d): %w", pid, err)
	}
	if err := poll(ctx, 20*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }); err != nil {
		return fmt.Errorf("glusterd (pid %d) did not exit: %w", pid, err)
	}
	if err := l.startGlusterd(ctx, env...); err != nil {
		return err
	}
	return gl("start", sharedVol)
}
