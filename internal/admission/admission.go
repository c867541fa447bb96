// Package admission checks a job's spec before rsa serve creates the job
// or mounts anything for it: every field, the site's limits, and the
// user's rights on the directories and programs the job names, checked
// with that user's own rights so that an answer never tells more than the
// user could see. It also sizes a job that asks for no capacity where no
// scheduler sizes jobs. Its errors are refusals (refuse.Invalid) that name
// the field, the problem and the fix.
package admission

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Checker checks specs against the site's config.
type Checker struct {
	Config *config.Config
	Policy mount.Policy // which directories may be mounted over
	Engine string       // the engine's name, for the messages
	// Images and Private say whether the engine's compute nodes can mount
	// an input image (input=image) and have output of their own
	// (output=private).
	Images, Private bool
}

// Describe is the one-line account of a spec for the job's events and
// the daemon's log.
func Describe(s job.Spec) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("slurm_job", s.SchedulerID)
	add("in", s.Input)
	add("input", s.InputMode)
	add("out", s.Output)
	add("output", s.OutputMode)
	add("stage_in", s.StageIn)
	add("stage_out", s.StageOut)
	parts = append(parts, "delay="+s.Delay.String(), "compute_nodes="+strconv.Itoa(s.ComputeNodes))
	if s.Capacity > 0 {
		parts = append(parts, "capacity="+units.FormatSize(s.Capacity))
	}
	if s.Sized != "" {
		parts = append(parts, "sized=("+s.Sized+")")
	}
	return strings.Join(parts, " ")
}

// inputMode checks the spec's input mode, and sets the site's default
// (input_mode) for a job with an input directory that gives none. A job
// whose input a stage-in program makes gets files: only RSA's own pack
// builds an image.
func (c *Checker) inputMode(s *job.Spec) error {
	images := c.Images
	switch s.InputMode {
	case "":
		switch {
		case s.Input == "":
		case s.StageIn == "" && c.Config.InputMode == job.InputImage && images:
			s.InputMode = job.InputImage
		default:
			s.InputMode = job.InputFiles
		}
	case job.InputFiles:
	case job.InputImage:
		switch {
		case s.Input == "":
			return refuse.Invalid("input=image makes an image of the input directory: give one (--in, RSA_DATA_IN), or drop input=image")
		case s.StageIn != "":
			return refuse.Invalid("input=image packs the input directory itself; a stage-in program (%s) stages files: drop one of them, or ask for input=files", s.StageIn)
		case !images:
			return refuse.Invalid("input=image: the compute nodes of engine %s cannot mount an input image; ask for input=files", c.Engine)
		}
	default:
		return refuse.Invalid("input mode %q: use image (a read-only image of the input directory) or files (a read-write copy, for a job that writes into its input directory)", s.InputMode)
	}
	return nil
}

// outputMode checks the spec's output mode.
func (c *Checker) outputMode(s *job.Spec) error {
	switch s.OutputMode {
	case "", job.OutputShared:
	case job.OutputPrivate:
		ok := c.Private
		switch {
		case s.Output == "":
			return refuse.Invalid("output=private gives each compute node a file system of its own at the output directory: give one (--out, RSA_DATA_OUT), or drop output=private")
		case s.StageOut != "":
			return refuse.Invalid("output=private stages every node's output out with the built-in copy; a stage-out program (%s) gets one RAMDISK: drop one of them, or ask for output=shared", s.StageOut)
		case !ok:
			return refuse.Invalid("output=private: the compute nodes of engine %s cannot have output of their own; ask for output=shared", c.Engine)
		}
	default:
		return refuse.Invalid("output mode %q: use shared (one RAM file system all the job's compute nodes share) or private (one of its own per compute node)", s.OutputMode)
	}
	return nil
}

// Validate checks a spec before anything is created or mounted. Every error
// names the field, the problem and the fix. The file system checks run with
// who's rights (asuser), so an answer never tells more than the user could
// see; with who nil (Slurm 22.05 validates a job before saying whose it
// is) they run as nobody and ownership is not checked.
func (c *Checker) Validate(s *job.Spec, who *asuser.Identity) error {
	for _, check := range []func(*job.Spec, *asuser.Identity) error{
		c.fields, c.size, c.directories, c.modes, c.programs,
	} {
		if err := check(s, who); err != nil {
			return err
		}
	}
	return nil
}

// fields checks that every text is one a log line, a path file and an
// environment may carry, and that there is something to accelerate; it
// sets the defaults of delay and compute nodes.
func (c *Checker) fields(s *job.Spec, _ *asuser.Identity) error {
	for _, f := range []struct{ what, v string }{
		{"input directory", s.Input}, {"output directory", s.Output},
		{"stage-in program", s.StageIn}, {"stage-out program", s.StageOut},
		{"pool", s.Pool}, {"scheduler job id", s.SchedulerID},
	} {
		if err := job.CheckText(f.what, f.v); err != nil {
			return refuse.Invalid("%v", err)
		}
	}
	if s.Input == "" && s.Output == "" && s.StageIn == "" {
		return refuse.Invalid("nothing to accelerate: give an input directory (--in, RSA_DATA_IN) and/or an output directory (--out, RSA_DATA_OUT)")
	}
	if s.Delay < 0 {
		s.Delay = c.Config.DefaultDelay
	}
	if s.ComputeNodes <= 0 {
		s.ComputeNodes = 1
	}
	return nil
}

// size checks an explicit capacity against the site's limits and what
// the RSA nodes hold together.
func (c *Checker) size(s *job.Spec, _ *asuser.Identity) error {
	if s.Capacity != 0 && s.Capacity < 1<<20 {
		return refuse.Invalid("capacity %s is below the 1M minimum", units.FormatSize(s.Capacity))
	}
	if l := c.Config.Limits.MaxJobCapacity; l > 0 && s.Capacity > l {
		return refuse.Invalid("capacity %s is above the site's limit of %s per job (limits.max_job_capacity); ask for less", units.FormatSize(s.Capacity), units.FormatSize(l))
	}
	if total := c.totalCapacity(); s.Capacity > total {
		return refuse.Invalid("capacity %s is more than all RSA nodes hold together (%s): it could never be met; ask for at most %s", units.FormatSize(s.Capacity), units.FormatSize(total), units.FormatSize(total))
	}
	if l := c.Config.Limits.MaxUserCapacity; l > 0 && s.Capacity > l {
		return refuse.Invalid("capacity %s is above the site's limit of %s per user (limits.max_user_capacity); ask for less", units.FormatSize(s.Capacity), units.FormatSize(l))
	}
	return nil
}

// directories checks the input and output directories: not RSA's own,
// and ones the user may mount over for their role.
func (c *Checker) directories(s *job.Spec, who *asuser.Identity) error {
	for _, t := range []struct{ role, path string }{{"input directory", s.Input}, {"output directory", s.Output}} {
		if t.path == "" {
			continue
		}
		if own, ok := c.overlapsOwn(t.path); ok {
			return refuse.Invalid("%s %q overlaps RSA's own %s", t.role, t.path, own)
		}
		if who == nil && !anyoneReaches(t.path) {
			continue // checked at setup, once the user is known
		}
		if err := asUser(who, func() error {
			if ownedRamdisk(t.path, who) {
				// A job of the same user's shows its RAMDISK here now
				// (a chain of jobs on one directory); the directory
				// below was checked when that job was submitted, and
				// the mount waits until that RAMDISK is gone.
				return nil
			}
			if who == nil {
				return c.Policy.CheckDir(t.role, t.path)
			}
			return c.Policy.CheckTarget(t.role, t.path, who.UID)
		}); err != nil {
			return refuse.Invalid("%v", err)
		}
	}
	return nil
}

// modes checks the access modes, setting the site's defaults, and that
// input and output are apart.
func (c *Checker) modes(s *job.Spec, who *asuser.Identity) error {
	asked := s.InputMode
	if err := c.inputMode(s); err != nil {
		return err
	}
	if err := c.outputMode(s); err != nil {
		return err
	}
	if err := c.projectModes(s, who, asked); err != nil {
		return err
	}
	if s.Input != "" && s.Output != "" && nested(s.Input, s.Output) {
		return refuse.Invalid("input %q and output %q must be separate directories (neither inside the other)", s.Input, s.Output)
	}
	return nil
}

// programs checks the stage-in and stage-out programs: a built-in mode
// in its phase, or a program the user may run, looked at without
// following any symlink (it runs as the user, who may still lose the
// right to run it before it starts); a stage-out program needs an output
// directory.
func (c *Checker) programs(s *job.Spec, who *asuser.Identity) error {
	for _, p := range []struct{ role, path string }{{"stage-in program", s.StageIn}, {"stage-out program", s.StageOut}} {
		if p.path == "" {
			continue
		}
		if stage.BuiltIn(p.path) {
			if (p.path == stage.ModePack) != (p.role == "stage-out program") {
				return refuse.Invalid("%s %q: 'pack' is a stage-out mode and 'unpack' a stage-in mode", p.role, p.path)
			}
			continue
		}
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) != p.path {
			return refuse.Invalid("%s %q must be a clean absolute path", p.role, p.path)
		}
		if who == nil && !anyoneReaches(p.path) {
			continue
		}
		if err := asUser(who, func() error {
			if who == nil {
				return mount.CheckProgram(p.role, p.path, 0, false)
			}
			return mount.CheckProgram(p.role, p.path, who.UID, true)
		}); err != nil {
			return refuse.Invalid("%v", err)
		}
	}
	if s.StageOut != "" && s.Output == "" {
		return refuse.Invalid("a stage-out program needs an output directory (--out, RSA_DATA_OUT) for $2")
	}
	return nil
}

// projectModes checks the access modes against project directories (ones
// the job's user does not own): an input image's root carries the input
// directory's owner, group and mode but not its ACLs, so one whose ACLs
// admit the user is staged as files when the mode was the default
// (asked is the mode the job asked for), refused when it was asked for;
// a private output's root would be the user's, so output=private takes
// the user's own directory only. Checked with the user's rights; with
// who nil (the user not known yet) it is left to setup.
func (c *Checker) projectModes(s *job.Spec, who *asuser.Identity, asked string) error {
	if who == nil {
		return nil
	}
	return asUser(who, func() error {
		if s.Input != "" && s.InputMode == job.InputImage && !ownedRamdisk(s.Input, who) {
			own, acl, err := ownerAndACL(s.Input, who.UID)
			if err != nil {
				return refuse.Invalid("input directory %q: %v", s.Input, err)
			}
			switch {
			case own || !acl:
			case asked == job.InputImage:
				return refuse.Invalid("input=image: input directory %q is shared with you by an ACL, which an input image cannot carry; ask for input=files", s.Input)
			default:
				s.InputMode = job.InputFiles
			}
		}
		if s.Output != "" && s.OutputMode == job.OutputPrivate && !ownedRamdisk(s.Output, who) {
			own, _, err := ownerAndACL(s.Output, who.UID)
			if err != nil {
				return refuse.Invalid("output directory %q: %v", s.Output, err)
			}
			if !own {
				return refuse.Invalid("output=private: output directory %q is not yours, and a file system of your own there would be: use output=shared for a project directory, or a directory of your own", s.Output)
			}
		}
		return nil
	})
}

// ownerAndACL reports whether the directory at path (no symlink followed)
// belongs to uid, and whether it carries a POSIX ACL.
func ownerAndACL(path string, uid uint32) (own, acl bool, err error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false, false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, false, err
	}
	acl, err = mount.HasACL(fd)
	return st.Uid == uid, acl, err
}

// anyoneReaches reports whether nobody may look up path: only then can a
// check made before the user is known say anything without being an
// oracle for paths its user could not see.
func anyoneReaches(path string) bool {
	return asuser.Do(asuser.Nobody, func() error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == nil {
			unix.Close(fd)
		}
		if errors.Is(err, unix.EACCES) {
			return err
		}
		return nil
	}) == nil
}

// ownedRamdisk reports whether path is exactly the mount point of one of
// RSA's RAMDISKs whose root belongs to who (the user is known).
func ownedRamdisk(path string, who *asuser.Identity) bool {
	if who == nil {
		return false
	}
	m, ok, err := mount.MountedAt(path)
	if err != nil || !ok || m.FSType != "tmpfs" || !strings.HasPrefix(m.Source, "rsa-") {
		return false
	}
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Uid == who.UID
}

// asUser runs a check with who's rights, or nobody's when who is nil.
func asUser(who *asuser.Identity, check func() error) error {
	id := asuser.Nobody
	if who != nil {
		id = *who
	}
	return asuser.Do(id, check)
}

// Size gives a job without a capacity, where no scheduler sizes jobs, a
// RAMDISK of its input's size (measured with the user's rights) plus
// output_headroom, within what one job of this user may get. An input that
// does not fit leaves the job to the proportion rule, which runs it on
// disk; Sized says which it was.
func (c *Checker) Size(s *job.Spec, who *asuser.Identity) error {
	var in int64
	if s.Input != "" {
		if err := asUser(who, func() (err error) {
			_, in, err = stage.Measure(s.Input)
			return err
		}); err != nil {
			return refuse.Invalid("measuring the input directory %s: %v", s.Input, err)
		}
	}
	limit, what := c.totalCapacity(), "the RSA nodes' RAM"
	for _, l := range []struct {
		v    int64
		what string
	}{{c.Config.Limits.MaxJobCapacity, "limits.max_job_capacity"}, {c.Config.Limits.MaxUserCapacity, "limits.max_user_capacity"}} {
		if l.v > 0 && l.v < limit {
			limit, what = l.v, l.what
		}
	}
	want := max(in+c.Config.OutputHeadroom, 1<<20)
	switch {
	case in > limit:
		s.Sized = fmt.Sprintf("the input's %s is more than one job may get (%s, %s): no RAMDISK", units.FormatSize(in), units.FormatSize(limit), what)
	case want > limit:
		s.Capacity = limit
		s.Sized = fmt.Sprintf("%s: the input's %s, and what is left of %s (%s) for output", units.FormatSize(limit), units.FormatSize(in), what, units.FormatSize(limit))
	default:
		s.Capacity = want
		s.Sized = fmt.Sprintf("%s: the input's %s + output_headroom %s", units.FormatSize(want), units.FormatSize(in), units.FormatSize(c.Config.OutputHeadroom))
	}
	return nil
}

// totalCapacity is the RAM of every RSA node together: the most one job
// can ever get.
func (c *Checker) totalCapacity() int64 {
	var total int64
	for _, n := range c.Config.Nodes {
		total += n.Capacity
	}
	return total
}

// RetryTo checks a directory to retry j's stage-out to as its output
// directory was checked at submission: absolute, apart from RSA's own
// directories and the job's input, and a directory the job's user may read
// and write (their own or a project's, mount.Policy.CheckTarget), opened
// with their rights. The stage-out runs as them all the same.
func (c *Checker) RetryTo(j *job.Job, dir string) error {
	if j.Spec.Output == "" {
		return refuse.Invalid("job %d has no output directory: there is nothing to stage out elsewhere", j.ID)
	}
	if !lifecycle.OwnersToFix(j.RSA) {
		return refuse.Invalid("job %d is %s: only a failed stage-out can be retried to another directory", j.ID, j.RSA)
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return refuse.Invalid("directory to stage out to %s: give an absolute path without . or .. parts", strconv.Quote(dir))
	}
	if own, ok := c.overlapsOwn(dir); ok {
		return refuse.Invalid("directory to stage out to %s overlaps RSA's own %s", strconv.Quote(dir), own)
	}
	if in := j.Spec.Input; in != "" && nested(dir, in) {
		return refuse.Invalid("directory to stage out to %s and the job's input %s must be separate directories (neither inside the other)", strconv.Quote(dir), strconv.Quote(in))
	}
	who := asuser.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups}
	if err := asUser(&who, func() error { return c.Policy.CheckTarget("directory to stage out to", dir, j.UID) }); err != nil {
		return refuse.Invalid("%v", err)
	}
	return nil
}

// nested reports whether clean absolute paths a and b are one directory
// or one is inside the other.
func nested(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// overlapsOwn reports which of RSA's own directories path is, is inside
// or holds, if any.
func (c *Checker) overlapsOwn(path string) (string, bool) {
	for _, own := range []string{c.Config.RamdiskRoot, c.Config.StateDir, filepath.Dir(c.Config.Socket)} {
		if own != "" && nested(path, own) {
			return own, true
		}
	}
	return "", false
}

// Limit applies the job limits l, the site's and the user's, to a new job
// of uid (whose account is name) beside the active jobs: a refuse.Limit
// error when uid has as many as limits.max_jobs_per_user, a
// refuse.Unavailable one when RSA tracks limits.max_active_jobs.
func Limit(active []*job.Job, uid uint32, name string, l config.Limits) error {
	var all, mine int
	for _, j := range active {
		if lifecycle.CountsTowardLimits(j.Machine()) {
			all++
			if j.UID == uid {
				mine++
			}
		}
	}
	if mine >= l.MaxJobsPerUser {
		return refuse.Limit("%s already has %d active RSA jobs (limits.max_jobs_per_user); wait for one to end, or cancel one (rsa status, rsa cancel ID)", name, mine)
	}
	if all >= l.MaxActiveJobs {
		return refuse.Unavailable("RSA already tracks %d active jobs (limits.max_active_jobs); try again later", all)
	}
	return nil
}

// Bounds gives a pending job whose record has no bounds of its own on
// its waits (one an older rsa serve wrote) the site's, or is nil: the
// unstarted expiry of an rsa submit job, the capacity wait of a Slurm
// burst buffer job without capacity=. The edit restarts the expiry's
// clock once, so the job ends no sooner than it would have; a capacity
// wait already begun keeps its start.
func Bounds(j *job.Job, cfg *config.Config) func(*job.Job) {
	if !j.Machine().Pending() {
		return nil
	}
	expiry := cfg.Limits.UnstartedExpiry
	expires := j.Scheduler == "" && j.UnstartedExpiry == 0 && expiry > 0
	wait := cfg.Slurm.CapacityWait
	bounded := j.Scheduler == config.SchedulerSlurm && j.Spec.Capacity == 0 && j.CapacityWait == 0 && wait > 0
	if !expires && !bounded {
		return nil
	}
	return func(n *job.Job) {
		if expires {
			n.UnstartedExpiry = expiry
		}
		if bounded {
			n.CapacityWait = wait
		}
	}
}
