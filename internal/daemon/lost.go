package daemon

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rsa-hpc/rsa/internal/daemon/watch"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// ramdiskGone checks, when the daemon starts, that a job whose state says it has a
// RAMDISK still has one. A reboot of the RSA host takes every RAMDISK with
// it; the job must then not wait for a retry of a stage-out from RAM that
// is gone, nor hold that RAM, nor have its stage-in resumed into a plain
// directory. The event says what was lost.
func (d *Daemon) ramdiskGone(ctx context.Context, j *job.Job) (msg, bool) {
	if !lifecycle.HasRamdisk(j.RSA) || j.Ramdisk == "" {
		return msg{}, false
	}
	rd := d.ramdisk(j)
	if _, ok, err := d.engine.Device(rd); err != nil || ok {
		if err != nil {
			d.log.Error("checking a job's RAMDISK", "job", j.ID, "err", err)
		}
		return msg{}, false
	}
	if r, ok := engine.As[engine.Reattacher](d.engine); ok {
		// Not mounted here: this host may have taken the state over
		// from another one, which had it mounted.
		if ok, err := r.Reattach(ctx, rd); err != nil || ok {
			if err != nil {
				d.log.Error("mounting a job's RAMDISK on this host again", "job", j.ID, "err", err)
			}
			return msg{}, false
		}
	}
	// What is left is the empty mount point and its gate.
	if err := d.engine.Destroy(ctx, rd); err != nil {
		d.log.Error("removing what is left of a lost RAMDISK", "job", j.ID, "err", err)
	}
	why := "its RAMDISK is gone (the RSA host restarted, or it was unmounted)"
	switch j.RSA {
	case lifecycle.StageOutFailed:
		why += "; the output it held had not been verified on persistent storage and is lost. When its stage-out failed: " + j.Error
	case lifecycle.StagingOut:
		why += fmt.Sprintf("; its stage-out was cut short: output it had not yet verified in %s is lost", j.Spec.Output)
	case lifecycle.InUseOut, lifecycle.Mounting:
		why += fmt.Sprintf("; what the job wrote into RAM at %s is lost (nothing of it had been staged out)", j.Spec.Output)
	default:
		why += "; it held nothing that is not on disk"
	}
	d.log.Warn("RAMDISK lost", "job", j.ID, "rsa", j.RSA, "ramdisk", rd.Dir)
	d.appendStageLog(j, "RAMDISK lost: "+why)
	return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvRamdiskLost, At: time.Now(), Reason: why}}, true
}

// silentAmong are the RSA nodes of parts that did not answer the engine's
// last look, sorted.
func (d *Daemon) silentAmong(parts []job.Part) []string {
	var silent []string
	nodes, ok := d.engineNodes()
	if !ok {
		return nil
	}
	for _, p := range parts {
		if !nodes.Up(p.Node) && !slices.Contains(silent, p.Node) {
			silent = append(silent, p.Node)
		}
	}
	slices.Sort(silent)
	return silent
}

// watcher reports the losses of the RAMDISKs' parts (package watch).
func (d *Daemon) watcher() *watch.Watch {
	return &watch.Watch{Engine: d.engine, Jobs: watchPort{d}, Logs: d.logs, Log: d.log}
}

// watchPort is the daemon as the watch sees it (watch.Jobs).
type watchPort struct{ d *Daemon }

var _ watch.Jobs = watchPort{}

func (p watchPort) EachActive(fn func(*job.Job)) { p.d.store.EachActive(fn) }

func (p watchPort) Ramdisk(j *job.Job) engine.Ramdisk { return p.d.ramdisk(j) }

func (p watchPort) Post(id int64, ev lifecycle.Event, edit func(*job.Job)) {
	p.d.post(msg{id: id, ev: ev, edit: edit})
}
