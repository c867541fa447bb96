package target

import (
	"context"
	"fmt"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

// SharedProfile turns shared@1g's volume profile on (gluster volume
// profile start: the brick counts and times every file operation) and
// returns what reads its counts since the read before (profile info
// incremental; the first read, those since it was turned on) and what
// turns it off again.
func SharedProfile(ctx context.Context, c Config) (interval func(context.Context) ([]gluster.FopStat, error), stop func() error, err error) {
	c = c.withDefaults()
	l := c.shared()
	gl := func(ctx context.Context, args ...string) (string, error) {
		return l.inServer(ctx, append([]string{"gluster", "--mode=script", "--xml", "volume", "profile", sharedVol}, args...)...)
	}
	if _, err := gl(ctx, "start"); err != nil {
		return nil, nil, fmt.Errorf("shared@1g's profile: %w", err)
	}
	stop = func() error {
		_, err := gl(context.WithoutCancel(ctx), "stop")
		return err
	}
	interval = func(ctx context.Context) ([]gluster.FopStat, error) {
		out, err := gl(ctx, "info", "incremental")
		if err != nil {
			return nil, fmt.Errorf("shared@1g's profile: %w", err)
		}
		fops, err := gluster.ParseProfile([]byte(out), gluster.Interval)
		if err != nil {
			return nil, fmt.Errorf("shared@1g's profile: %w", err)
		}
		return fops, nil
	}
	return interval, stop, nil
}
