package daemon

import (
	"github.com/rsa-hpc/rsa/internal/daemon/watch"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

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
