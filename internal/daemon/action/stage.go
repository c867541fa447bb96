package action

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// stage runs one staging phase of j as the
// job's user, bounded by limits.stage_timeout, writing to the job's log
// and recording its progress. An engine that stages on its own nodes
// (engine.Stager) runs it there, unless here: then it runs on this host
// through j.Ramdisk (a private output's tree, mounted here for its
// stage-out). degraded says a part of the RAMDISK is served by its
// replicas.
func (e *Env) stage(ctx context.Context, j *job.Job, phase stage.Phase, program, data string, degraded, here bool) error {
	if e.Config.Limits.StageTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Config.Limits.StageTimeout)
		defer cancel()
	}
	logf, err := e.Logs.Open(j.ID, j.CreatedAt)
	if err != nil {
		return fmt.Errorf("opening stage log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "%s %s: %s\n", time.Now().Format(time.RFC3339), phase, describe(program, data))
	started := time.Now()
	e.Daemon.SetProgress(j.ID, job.Progress{Phase: string(phase), Started: started, Updated: started})
	rd := e.Daemon.Ramdisk(j)
	task := stage.Task{
		Job: j.ID, Phase: phase, User: identity(j), Program: program, Ramdisk: j.Ramdisk, Data: data, Log: logf,
		Degraded: degraded, Image: phase == stage.StageIn && rd.RootOnly,
		Built: func(st stage.ImageStats) { e.Daemon.ImageBuilt(st.Bytes, st.Took) },
		Progress: func(p stage.Progress) {
			e.Daemon.SetProgress(j.ID, job.Progress{Phase: string(phase), Files: p.Files, Bytes: p.Bytes, TotalFiles: p.TotalFiles,
				TotalBytes: p.TotalBytes, Started: started, Updated: time.Now()})
		},
	}
	if s, ok := engine.As[engine.Stager](e.Engine); ok && !here {
		err = s.Stage(ctx, rd, task)
	} else {
		// The engine's RAMDISK is one file system here, which nobody
		// looks into before the stage-in ends and whose loss the daemon
		// sees whole (engine.Stager).
		task.Private = true
		err = e.Runner.Run(ctx, task)
	}
	if err != nil {
		fmt.Fprintf(logf, "%s %s failed: %v\n", time.Now().Format(time.RFC3339), phase, err)
	} else {
		fmt.Fprintf(logf, "%s %s done in %s\n", time.Now().Format(time.RFC3339), phase, time.Since(started).Round(time.Millisecond))
	}
	return err
}

// Stage is stage for the daemon's own callers (tests of the engine
// wrappers): one phase of j, on the engine's nodes if it stages there.
func (e *Env) Stage(ctx context.Context, j *job.Job, phase stage.Phase, program, data string, degraded bool) error {
	return e.stage(ctx, j, phase, program, data, degraded, false)
}

// describe is the log's line for what a stage runs.
func describe(program, data string) string {
	if stage.BuiltIn(program) {
		return "built-in " + program + " with " + data
	}
	if program != "" {
		return fmt.Sprintf("running %s RAMDISK %s", program, data)
	}
	return "built-in copy with " + data
}

// identity is who j's stages run as.
func identity(j *job.Job) stage.Identity {
	return stage.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups, Name: j.User, Home: j.Home}
}
