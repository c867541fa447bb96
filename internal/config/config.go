// Package config reads and validates /etc/rsa/rsa.toml. It owns the meaning
// and defaults of the core keys (documented in docs/config.md); each
// engine reads its own keys (its nodes' capacity and address, its tables)
// through the EngineKeys Load is handed, and the config keeps what it read
// as EngineConfig, which this package does not look into. It must not
// start anything: it only turns a file into a checked Config.
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/rsa-hpc/rsa/internal/units"
)

// DefaultPath is where the daemon and the CLI look when neither --config nor
// RSA_CONFIG names a file.
const DefaultPath = "/etc/rsa/rsa.toml"

// Node is one RSA node: a host whose RAM is lent to jobs.
type Node struct {
	Name     string
	Engine   string
	Capacity int64 // bytes of RAM for RAMDISKs
	// Address is where the node is reached from other hosts, for an
	// engine whose nodes are apart from this host (engine gluster: its
	// agent and its glusterd); "" for one whose nodes are this host.
	// The engine's EngineKeys.Node reads and checks it.
	Address string
}

// EngineLocal is the engine of a config that names none: one tmpfs per
// job on this host.
const EngineLocal = "local"

// Config is the validated configuration.
type Config struct {
	Path        string // the file read, or "" for the embedded default
	StateDir    string
	Socket      string
	RamdiskRoot string
	Scheduler   string
	// Engine names the engine that builds RAMDISKs, one of the Engines
	// the config was read with.
	Engine string
	// EngineConfig is what Engine's EngineKeys.Parse kept of its own
	// tables (engine gluster: a *gluster.Config); nil for an engine
	// without tables.
	EngineConfig any
	Proportion   int
	MinJobNodes  int
	DefaultDelay time.Duration
	// OutputHeadroom is what a job of scheduler "none" (rsa run, rsa
	// submit) without a capacity gets beside its input's size.
	OutputHeadroom int64
	// InputMode is how a job's input reaches it when the job says not
	// (input_mode): "image" (one read-only erofs image each compute node
	// mounts) or "files" (a read-write tree).
	InputMode string
	// ImageLoop mounts input images through a loop device even where
	// the kernel reads an image file itself (image_mount = "loop"; the
	// default "auto" takes file-backed erofs where the kernel has it).
	ImageLoop bool
	Tick      time.Duration
	LogLevel  string
	// HistoryRetention is how long the record of an ended job (its
	// states, events and log) is kept; 0: for ever.
	HistoryRetention time.Duration
	Nodes            []Node
	Limits           Limits
	Slurm            Slurm
	Remote           Remote
	Failover         Failover
	Metrics          Metrics
	Notify           Notify
	// PrivateData hides other users' job details (paths, home, groups,
	// errors, logs): a user sees only id, user, states, size and progress
	// of jobs not their own, as Slurm's PrivateData=jobs does.
	PrivateData bool
	// AllowedPaths, if set, are the only trees RSA mounts over (a job's
	// input or output directory must be one of them or below one).
	AllowedPaths []string
	// RefusedFSTypes are file system types RSA never mounts over; nil
	// means mount.DefaultRefusedFSTypes.
	RefusedFSTypes []string
}

// Schedulers RSA can follow.
const (
	SchedulerNone      = "none"       // rsa run / rsa submit
	SchedulerSlurm     = "slurm"      // Slurm's burst_buffer/lua plugin calls rsa slurm-bb
	SchedulerSlurmPoll = "slurm-poll" // RSA polls squeue (the thesis' integration)
)

// Slurm configures both Slurm adapters.
type Slurm struct {
	// Users may call the scheduler hooks besides root (slurmctld's
	// SlurmUser).
	Users []string
	// Pool is the burst buffer pool name RSA reports to Slurm.
	Pool string
	// PollInterval is how often the polling adapter reads squeue.
	PollInterval time.Duration
	// StageInLead is how long before a job's expected start RSA begins
	// its stage-in, on top of the copy's estimated duration.
	StageInLead time.Duration
	// StageRate estimates copy time (bytes per second) for the lead.
	StageRate int64
	// EstimateWait bounds how long a burst buffer job whose nodes are
	// busy waits for Slurm's estimate of its start before its stage-in
	// begins anyway. Slurm's main scheduler asks for a stage-in before
	// backfill has estimated the start, stamping the job with the time
	// of its own pass; only backfill (every bf_interval) says when the
	// job will run. 0: stage in as soon as Slurm asks.
	EstimateWait time.Duration
	// CapacityWait bounds how long a burst buffer job waits in data_in
	// for RSA capacity before it runs from disk; 0: no bound. Slurm
	// 22.05's slurmscriptd leaks each script's pipe into the scripts it
	// starts beside it, so a data_in that waits keeps Slurm from seeing
	// other jobs' stage-ins end: a wait for RAM that one of those jobs
	// holds would never end.
	CapacityWait time.Duration
	// PrologGrace is how long the Slurm prolog and epilog (rsa
	// slurm-prolog, rsa slurm-epilog) wait out an rsa serve that does not
	// answer, for a job that is RSA's, before they let the job go on
	// without RSA: long enough to ride out a restart of the daemon, short
	// enough that a daemon that stays down does not keep the job's compute
	// nodes idle. 0: they never wait.
	PrologGrace time.Duration
	// NodeNamespaces, if set, holds one pinned mount namespace per
	// compute node name; RSA mounts inside them (see access.Namespaces).
	NodeNamespaces string
	// Bin is where squeue and scontrol are, "" for $PATH.
	Bin string
}

// Remote is access to the daemon from other hosts (login nodes): TCP,
// each request authenticated by a MUNGE credential.
type Remote struct {
	// Listen is the TCP address to serve ("host:port"); "": none.
	Listen string
	// MungeSocket is munged's socket; "": MUNGE's default.
	MungeSocket string
}

// Failover pairs this rsa serve with one on a second control host that
// shares its state_dir (docs/operations.md, "Controller failover"): the
// one that holds the lease on state_dir is active, the other is the
// standby, which forwards every request on its socket to the active one
// and takes over when the lease is free.
type Failover struct {
	// Listen is where this rsa serve, while active, takes the requests
	// the standby forwards ("host:port"); "": no failover.
	Listen string
	// Advertise is the address the standby forwards to; Listen unless
	// Listen's host is unspecified (0.0.0.0).
	Advertise string
	// Peer is the other control host: the name in its certificate (role
	// control), which every RAMDISK admits as it admits this host's.
	Peer string
	// PeerAddress is the other control host's address as the RSA nodes
	// and this host see it: its forwarded requests must come from there,
	// and every RAMDISK admits it.
	PeerAddress string
}

// Enabled reports whether this rsa serve is one of a failover pair.
func (f Failover) Enabled() bool { return f.Listen != "" }

// MarkersDir is where the Slurm job markers are kept (slurm.Markers):
// beside the socket, or, in a failover pair, beside the shared state_dir,
// where the prolog of either control host finds the active one's.
func (c *Config) MarkersDir() string {
	if c.Failover.Enabled() {
		return c.StateDir + ".slurm-jobs"
	}
	return c.Socket + ".slurm-jobs"
}

// Metrics is where rsa serve serves Prometheus metrics.
type Metrics struct {
	// Listen is the TCP address ("127.0.0.1:9478"); "": not served.
	Listen string
}

// Notify is how a job's user is told what waits for them (package
// notify): a failed stage-out, lost output, output still held in RAM.
type Notify struct {
	// Program is called as Slurm calls MailProg (PROGRAM -s SUBJECT
	// USER, the message on its standard input), as root; "": nobody is
	// told.
	Program string
	// HeldAfter is how long output may wait in RAM after a failed
	// stage-out before its user is reminded, and again after as long;
	// 0: no reminders.
	HeldAfter time.Duration
	// Timeout bounds one call of Program.
	Timeout time.Duration
}

// DefaultNotifyHeldAfter is notify.held_after: a day, so that output
// left in RAM over a night or a weekend is noticed.
const DefaultNotifyHeldAfter = 24 * time.Hour

// Limits bound what one job or one user may take.
type Limits struct {
	// MaxActiveJobs bounds the jobs that hold or wait for RAM, all users
	// together; INELIGIBLE and finished jobs do not count.
	MaxActiveJobs int
	// MaxJobsPerUser bounds one user's active jobs, so that no user can
	// lock the others out.
	MaxJobsPerUser int
	// MaxJobCapacity caps one job's RAM; 0: the accelerator's size.
	MaxJobCapacity int64
	// MaxUserCapacity caps the RAM one user's jobs hold together; a job
	// past it waits. 0: no cap.
	MaxUserCapacity int64
	// StageTimeout stops a stage-in or stage-out that runs longer.
	StageTimeout time.Duration
	// StageBWLimit caps the bytes per second each built-in stage-in and
	// stage-out reads (rsa copy --bwlimit), so that one job's staging
	// cannot take the whole shared file system or network from the
	// others'. 0: no cap.
	StageBWLimit int64
	// StageMemory is the most memory, in bytes, that the processes of one
	// stage (the built-in copy or a job's own program, and all they
	// start) may use together: memory.max of the stage's cgroup, which
	// may not swap. Past it the OOM killer ends the stage, and nothing
	// outside it: one user's staging cannot make the kernel kill
	// another job's bricks, glusterd or the agent. 0: no limit.
	StageMemory int64
	// StagePids is the most processes and threads one stage may run at
	// once (pids.max). 0: no limit.
	StagePids int64
	// StageCPU is the CPU time one stage may use, in thousandths of a CPU
	// (cpu.max; 2000: two CPUs' worth). 0: no limit.
	StageCPU int64
	// StageNetwork is StageNetworkNone or StageNetworkHost.
	StageNetwork string
	// UnstartedExpiry ends a job submitted with `rsa submit` that has not
	// started this long after it was submitted, releasing its RAM.
	UnstartedExpiry time.Duration
	// KillGrace is how long a process left holding a finished job's
	// RAMDISK has between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// BytesPerInode sizes a RAMDISK's inode table (nr_inodes = capacity /
	// BytesPerInode): inode memory is not part of tmpfs' size= limit.
	BytesPerInode int64
	// MaxConnections and MaxConnectionsPerUser bound the daemon's open
	// socket connections, so no user can exhaust its descriptors.
	MaxConnections        int
	MaxConnectionsPerUser int
}

// file mirrors the TOML layout; strings are parsed so errors can name keys.
type file struct {
	StateDir       *string    `toml:"state_dir"`
	Socket         *string    `toml:"socket"`
	RamdiskRoot    *string    `toml:"ramdisk_root"`
	Scheduler      *string    `toml:"scheduler"`
	Proportion     *int       `toml:"proportion"`
	MinJobNodes    *int       `toml:"min_job_nodes"`
	DefaultDelay   *string    `toml:"default_delay"`
	OutputHeadroom *string    `toml:"output_headroom"`
	InputMode      *string    `toml:"input_mode"`
	ImageMount     *string    `toml:"image_mount"`
	Tick           *string    `toml:"tick"`
	LogLevel       *string    `toml:"log_level"`
	History        *string    `toml:"history_retention"`
	Engine         *string    `toml:"engine"`
	Nodes          []NodeKeys `toml:"nodes"`
	PrivateData    *bool      `toml:"private_data"`
	AllowedPaths   []string   `toml:"allowed_paths"`
	RefusedFSTypes []string   `toml:"refused_fs_types"`
	Limits         struct {
		MaxActiveJobs         *int    `toml:"max_active_jobs"`
		MaxJobsPerUser        *int    `toml:"max_jobs_per_user"`
		MaxJobCapacity        *string `toml:"max_job_capacity"`
		MaxUserCapacity       *string `toml:"max_user_capacity"`
		StageTimeout          *string `toml:"stage_timeout"`
		StageBWLimit          *string `toml:"stage_bwlimit"`
		StageMemory           *string `toml:"stage_memory"`
		StagePids             any     `toml:"stage_pids"` // a number, or a string of one
		StageCPU              any     `toml:"stage_cpu"`
		StageNetwork          *string `toml:"stage_network"`
		UnstartedExpiry       *string `toml:"unstarted_expiry"`
		KillGrace             *string `toml:"kill_grace"`
		BytesPerInode         *string `toml:"bytes_per_inode"`
		MaxConnections        *int    `toml:"max_connections"`
		MaxConnectionsPerUser *int    `toml:"max_connections_per_user"`
	} `toml:"limits"`
	Slurm struct {
		Users          []string `toml:"users"`
		Pool           *string  `toml:"pool"`
		PollInterval   *string  `toml:"poll_interval"`
		StageInLead    *string  `toml:"stage_in_lead"`
		StageRate      *string  `toml:"stage_rate"`
		EstimateWait   *string  `toml:"estimate_wait"`
		CapacityWait   *string  `toml:"capacity_wait"`
		PrologGrace    *string  `toml:"prolog_grace"`
		NodeNamespaces *string  `toml:"node_namespaces"`
		Bin            *string  `toml:"bin"`
	} `toml:"slurm"`
	Metrics struct {
		Listen *string `toml:"listen"`
	} `toml:"metrics"`
	Notify struct {
		Program   *string `toml:"program"`
		HeldAfter *string `toml:"held_after"`
		Timeout   *string `toml:"timeout"`
	} `toml:"notify"`
	Remote struct {
		Listen      *string `toml:"listen"`
		MungeSocket *string `toml:"munge_socket"`
	} `toml:"remote"`
	Failover struct {
		Listen      *string `toml:"listen"`
		Advertise   *string `toml:"advertise"`
		Peer        *string `toml:"peer"`
		PeerAddress *string `toml:"peer_address"`
	} `toml:"failover"`
}

// Defaults of every key; docs/config.md repeats them.
const (
	DefaultStateDir    = "/var/lib/rsa"
	DefaultSocket      = "/run/rsa/rsa.sock"
	DefaultRamdiskRoot = "/run/rsa/ramdisk"
	DefaultProportion  = 128 // compute nodes per RSA node (App. C)
	DefaultDelaySecs   = 300 // input-to-output switch (App. C)
	// A stage's limits: enough for the built-in copy at full speed and
	// for most stage programs (tar, rsync, a script or two), little
	// enough that several stages at once leave an RSA node its RAM.
	DefaultStageMemory = 4 << 30
	DefaultStagePids   = 1024
	DefaultStageCPU    = 2000 // thousandths of a CPU: two CPUs
	// DefaultPrologGrace rides out a restart of rsa serve (slurm.prolog_grace).
	DefaultPrologGrace = 30 * time.Second
)

// The values of limits.stage_network.
const (
	// StageNetworkNone gives each stage a network namespace of its own
	// with nothing in it: a stage program reaches no port of the host it
	// runs on (glusterd, the bricks) nor anything else. Mounted file
	// systems work all the same.
	StageNetworkNone = "none"
	// StageNetworkHost leaves stages on the host's network.
	StageNetworkHost = "host"
)

// Bounds of the stage limits: below these no stage could run (or, for
// CPU, cpu.max's smallest quota, 1 ms in 100 ms); above these the kernel
// refuses them.
const (
	minStageMemory = 16 << 20
	minStagePids   = 16
	maxStagePids   = 4194304 // the kernel's PID_MAX_LIMIT
	minStageCPU    = 10      // 0.01 CPU
	maxStageCPU    = 65536 * 1000
)

func defaults() Config {
	return Config{
		StateDir:         DefaultStateDir,
		Socket:           DefaultSocket,
		RamdiskRoot:      DefaultRamdiskRoot,
		Scheduler:        "none",
		Engine:           EngineLocal,
		Proportion:       DefaultProportion,
		DefaultDelay:     DefaultDelaySecs * time.Second,
		OutputHeadroom:   1 << 30,
		Tick:             time.Second,
		LogLevel:         "info",
		HistoryRetention: 90 * 24 * time.Hour,
		PrivateData:      true,
		InputMode:        "image",
		Limits: Limits{MaxActiveJobs: 256, MaxJobsPerUser: 32, StageTimeout: 12 * time.Hour,
			UnstartedExpiry: time.Hour, KillGrace: 10 * time.Second, BytesPerInode: 8 << 10,
			MaxConnections: 1024, MaxConnectionsPerUser: 64,
			StageMemory: DefaultStageMemory, StagePids: DefaultStagePids, StageCPU: DefaultStageCPU, StageNetwork: StageNetworkNone},
		Slurm: Slurm{Pool: "rsa", PollInterval: 5 * time.Second, StageInLead: 10 * time.Minute, StageRate: 1 << 30, EstimateWait: 2 * time.Minute, CapacityWait: 5 * time.Minute,
			PrologGrace: DefaultPrologGrace},
	}
}

// Resolve picks the config path: the flag, then RSA_CONFIG, then the default.
// explicit reports whether the user named it (a missing named file is an
// error; a missing default file means the embedded default).
func Resolve(flag string) (path string, explicit bool) {
	if flag != "" {
		return flag, true
	}
	if env := os.Getenv("RSA_CONFIG"); env != "" {
		return env, true
	}
	return DefaultPath, false
}

// Load reads and validates the file at path, with the keys of the
// engines given (all.Engines). A missing file that was not named
// explicitly yields the embedded default: one local RSA node with half of
// the RAM available now.
func Load(path string, explicit bool, engines Engines) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return Parse(nil, engines)
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w (name a readable file with --config or RSA_CONFIG)", err)
	}
	c, err := Parse(data, engines)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse validates a TOML document: the core keys here, the keys of the
// engine it names by that engine's EngineKeys. Errors name the key and
// the fix.
func Parse(data []byte, engines Engines) (*Config, error) {
	f, err := decodeFile(data, engines)
	if err != nil {
		return nil, err
	}
	c := defaults()
	if err := parsePaths(&f, &c); err != nil {
		return nil, err
	}
	if err := parseScheduling(&f, &c); err != nil {
		return nil, err
	}
	if err := parseJobData(&f, &c); err != nil {
		return nil, err
	}
	if err := parseDaemon(&f, &c); err != nil {
		return nil, err
	}
	if f.Engine != nil {
		c.Engine = *f.Engine
	}
	eng, ok := engines.find(c.Engine)
	if !ok {
		return nil, engines.unknown(c.Engine)
	}
	if err := parseNodes(&f, eng, &c); err != nil {
		return nil, err
	}
	if err := parseLimits(&f, &c.Limits); err != nil {
		return nil, err
	}
	if err := parseAccess(&f, &c); err != nil {
		return nil, err
	}
	if err := parseSlurm(&f, &c.Slurm); err != nil {
		return nil, err
	}
	if err := parseEndpoints(&f, &c); err != nil {
		return nil, err
	}
	if err := parseNotify(&f, &c.Notify); err != nil {
		return nil, err
	}
	if err := parseFailover(&f, &c.Failover); err != nil {
		return nil, err
	}
	if err := parseEngine(data, eng, engines, &c); err != nil {
		return nil, err
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return &c, nil
}

// decodeFile reads data's core keys into a file; a key that is neither a core
// key nor in a table one of engines owns is an error.
func decodeFile(data []byte, engines Engines) (file, error) {
	var f file
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return file{}, fmt.Errorf("not valid TOML: %w", err)
	}
	for _, k := range md.Undecoded() {
		// An engine's tables are its to decode (parseEngine).
		if !engines.owns(k[0]) {
			return file{}, unknownKey(k.String())
		}
	}
	return f, nil
}

// parsePaths reads the daemon's own paths: state_dir, socket and
// ramdisk_root.
func parsePaths(f *file, c *Config) error {
	for _, e := range []error{
		SetPath("state_dir", f.StateDir, &c.StateDir),
		SetPath("socket", f.Socket, &c.Socket),
		SetPath("ramdisk_root", f.RamdiskRoot, &c.RamdiskRoot),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// parseScheduling reads which scheduler RSA follows and how it sizes and
// times jobs' RAMDISKs: scheduler, proportion, min_job_nodes and
// default_delay.
func parseScheduling(f *file, c *Config) error {
	if f.Scheduler != nil {
		switch *f.Scheduler {
		case SchedulerNone, SchedulerSlurm, SchedulerSlurmPoll:
		default:
			return fmt.Errorf("scheduler: %q is not supported (use \"none\", \"slurm\" for burst_buffer/lua or \"slurm-poll\")", *f.Scheduler)
		}
		c.Scheduler = *f.Scheduler
	}
	if f.Proportion != nil {
		if *f.Proportion < 1 {
			return fmt.Errorf("proportion: %d must be at least 1 (compute nodes per RSA node)", *f.Proportion)
		}
		c.Proportion = *f.Proportion
	}
	if f.MinJobNodes != nil {
		if *f.MinJobNodes < 1 {
			return fmt.Errorf("min_job_nodes: %d must be at least 1", *f.MinJobNodes)
		}
		c.MinJobNodes = *f.MinJobNodes
	}
	if f.DefaultDelay != nil {
		d, err := units.ParseDuration(*f.DefaultDelay)
		if err != nil {
			return fmt.Errorf("default_delay: %w", err)
		}
		c.DefaultDelay = d
	}
	return nil
}

// parseJobData reads how a job's data sits in its RAMDISK: input_mode,
// image_mount and output_headroom.
func parseJobData(f *file, c *Config) error {
	if f.InputMode != nil {
		switch *f.InputMode {
		case "image", "files":
			c.InputMode = *f.InputMode
		default:
			return fmt.Errorf("input_mode %q: use \"image\" (a read-only image of the input) or \"files\" (a read-write tree)", *f.InputMode)
		}
	}
	if f.ImageMount != nil {
		switch *f.ImageMount {
		case "auto", "loop":
			c.ImageLoop = *f.ImageMount == "loop"
		default:
			return fmt.Errorf("image_mount %q: use \"auto\" (file-backed erofs where the kernel has it, Linux 6.12+, else a loop device) or \"loop\"", *f.ImageMount)
		}
	}
	if f.OutputHeadroom != nil {
		n, err := units.ParseSize(*f.OutputHeadroom)
		if err != nil {
			return fmt.Errorf("output_headroom: %w", err)
		}
		c.OutputHeadroom = n
	}
	return nil
}

// parseDaemon reads how the daemon runs: tick, history_retention and
// log_level.
func parseDaemon(f *file, c *Config) error {
	if f.Tick != nil {
		d, err := units.ParseDuration(*f.Tick)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			return fmt.Errorf("tick: %q must be a duration between 10ms and 1m", *f.Tick)
		}
		c.Tick = d
	}
	if f.History != nil {
		d, err := units.ParseDuration(*f.History)
		if err != nil || (d != 0 && d < time.Hour) {
			return fmt.Errorf("history_retention: %q must be a duration of an hour or more, such as \"90d\" (0: keep for ever)", *f.History)
		}
		c.HistoryRetention = d
	}
	if f.LogLevel != nil {
		switch *f.LogLevel {
		case "debug", "info", "warn", "error":
		default:
			return fmt.Errorf("log_level: %q must be debug, info, warn or error", *f.LogLevel)
		}
		c.LogLevel = *f.LogLevel
	}
	return nil
}

// parseAccess reads what users may see and which trees RSA mounts over:
// private_data, allowed_paths and refused_fs_types.
func parseAccess(f *file, c *Config) error {
	if f.PrivateData != nil {
		c.PrivateData = *f.PrivateData
	}
	for i, p := range f.AllowedPaths {
		if err := SetPath(fmt.Sprintf("allowed_paths[%d]", i), &p, new(string)); err != nil {
			return err
		}
		if p == "/" {
			return fmt.Errorf("allowed_paths[%d]: \"/\" allows everything; leave allowed_paths out instead", i)
		}
	}
	c.AllowedPaths = f.AllowedPaths
	for i, t := range f.RefusedFSTypes {
		if t == "" || strings.ContainsAny(t, " \t\n/") {
			return fmt.Errorf("refused_fs_types[%d]: %q is not a file system type name (see /proc/filesystems)", i, t)
		}
	}
	c.RefusedFSTypes = f.RefusedFSTypes
	return nil
}

// parseEndpoints reads the addresses the daemon serves on beside its
// socket, remote.listen and metrics.listen, and the MUNGE socket its
// remote server checks credentials with, remote.munge_socket.
func parseEndpoints(f *file, c *Config) error {
	if l := f.Remote.Listen; l != nil && *l != "" {
		if _, port, err := net.SplitHostPort(*l); err != nil || port == "" || port == "0" {
			return fmt.Errorf("remote.listen: %q must be host:port, such as \"0.0.0.0:7710\"", *l)
		}
		c.Remote.Listen = *l
	}
	if l := f.Metrics.Listen; l != nil && *l != "" {
		if _, port, err := net.SplitHostPort(*l); err != nil || port == "" {
			return fmt.Errorf("metrics.listen: %q must be host:port, such as \"127.0.0.1:9478\"", *l)
		}
		c.Metrics.Listen = *l
	}
	return SetPath("remote.munge_socket", f.Remote.MungeSocket, &c.Remote.MungeSocket)
}

func parseLimits(f *file, l *Limits) error {
	fl := f.Limits
	for _, n := range []struct {
		key string
		v   *int
		dst *int
	}{
		{"limits.max_active_jobs", fl.MaxActiveJobs, &l.MaxActiveJobs},
		{"limits.max_jobs_per_user", fl.MaxJobsPerUser, &l.MaxJobsPerUser},
		{"limits.max_connections", fl.MaxConnections, &l.MaxConnections},
		{"limits.max_connections_per_user", fl.MaxConnectionsPerUser, &l.MaxConnectionsPerUser},
	} {
		if n.v == nil {
			continue
		}
		if *n.v < 1 {
			return fmt.Errorf("%s: %d must be at least 1", n.key, *n.v)
		}
		*n.dst = *n.v
	}
	for _, s := range []struct {
		key string
		v   *string
		dst *int64
		min int64
	}{
		{"limits.max_job_capacity", fl.MaxJobCapacity, &l.MaxJobCapacity, 1 << 20},
		{"limits.max_user_capacity", fl.MaxUserCapacity, &l.MaxUserCapacity, 1 << 20},
		{"limits.bytes_per_inode", fl.BytesPerInode, &l.BytesPerInode, 1 << 10},
		{"limits.stage_bwlimit", fl.StageBWLimit, &l.StageBWLimit, 0},
	} {
		if s.v == nil {
			continue
		}
		n, err := units.ParseSize(*s.v)
		if err != nil || n < s.min {
			return fmt.Errorf("%s: %q must be a size of at least %s", s.key, *s.v, units.FormatSize(s.min))
		}
		*s.dst = n
	}
	for _, d := range []struct {
		key string
		v   *string
		dst *time.Duration
		min time.Duration
	}{
		{"limits.stage_timeout", fl.StageTimeout, &l.StageTimeout, 0},
		{"limits.unstarted_expiry", fl.UnstartedExpiry, &l.UnstartedExpiry, 0},
		{"limits.kill_grace", fl.KillGrace, &l.KillGrace, 0},
	} {
		if d.v == nil {
			continue
		}
		v, err := units.ParseDuration(*d.v)
		if err != nil || v < d.min {
			return fmt.Errorf("%s: %q must be a duration of at least %s", d.key, *d.v, d.min)
		}
		*d.dst = v
	}
	if err := parseStageLimits(fl.StageMemory, fl.StagePids, fl.StageCPU, fl.StageNetwork, l); err != nil {
		return err
	}
	if l.StageBWLimit > 0 && l.StageBWLimit < 1<<20 {
		return fmt.Errorf("limits.stage_bwlimit: %q is below 1M a second, which would stall staging: give at least \"1M\", or \"0\" for no cap", *fl.StageBWLimit)
	}
	if l.MaxJobsPerUser > l.MaxActiveJobs {
		l.MaxJobsPerUser = l.MaxActiveJobs
	}
	return nil
}

// parseStageLimits reads the limits each stage's processes are held to.
// The counts (stage_pids, stage_cpu) may be TOML numbers or strings of
// them, as the sizes beside them are strings.
func parseStageLimits(memory *string, pids, cpu any, network *string, l *Limits) error {
	if memory != nil {
		n, err := units.ParseSize(*memory)
		if err != nil || (n != 0 && n < minStageMemory) {
			return fmt.Errorf("limits.stage_memory: %q must be a size of at least %s, such as \"4G\", or \"0\" for no limit", *memory, units.FormatSize(minStageMemory))
		}
		l.StageMemory = n
	}
	if pids != nil {
		n, err := strconv.ParseInt(tomlNumber(pids), 10, 64)
		if err != nil || (n != 0 && (n < minStagePids || n > maxStagePids)) {
			return fmt.Errorf("limits.stage_pids: %s must be a whole number of processes from %d to %d, such as 1024, or 0 for no limit", tomlQuote(pids), minStagePids, maxStagePids)
		}
		l.StagePids = n
	}
	if cpu != nil {
		f, err := strconv.ParseFloat(tomlNumber(cpu), 64)
		n := int64(math.Round(f * 1000))
		if err != nil || math.IsNaN(f) || f < 0 || f > maxStageCPU/1000 || (f != 0 && n < minStageCPU) {
			return fmt.Errorf("limits.stage_cpu: %s must be a number of CPUs from 0.01 to %d, such as 2 or 0.5, or 0 for no limit", tomlQuote(cpu), maxStageCPU/1000)
		}
		l.StageCPU = n
	}
	if network != nil {
		switch *network {
		case StageNetworkNone, StageNetworkHost:
		default:
			return fmt.Errorf("limits.stage_network: %q must be %q (each stage in a network namespace of its own, with no network) or %q (the host's network)", *network, StageNetworkNone, StageNetworkHost)
		}
		l.StageNetwork = *network
	}
	return nil
}

// tomlNumber is the text of a TOML value that should be a number: a
// string as it is, an integer or a float in Go's shortest form, anything
// else as "" (which no number parses from).
func tomlNumber(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// tomlQuote shows a TOML value in an error as the file has it.
func tomlQuote(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v", v)
}

// SetPath sets *dst to the path p names, if any, which must be clean and
// absolute.
func SetPath(key string, p *string, dst *string) error {
	if p == nil {
		return nil
	}
	if !filepath.IsAbs(*p) || filepath.Clean(*p) != *p {
		return fmt.Errorf("%s: %q must be a clean absolute path", key, *p)
	}
	*dst = *p
	return nil
}

// parseFailover reads [failover]: all of listen, peer and peer_address,
// or none of them.
func parseFailover(f *file, o *Failover) error {
	ff := f.Failover
	set := func(p *string) bool { return p != nil && *p != "" }
	if !set(ff.Listen) && !set(ff.Advertise) && !set(ff.Peer) && !set(ff.PeerAddress) {
		return nil
	}
	if !set(ff.Listen) || !set(ff.Peer) || !set(ff.PeerAddress) {
		return errors.New("failover: give listen, peer and peer_address together (this host's address for the standby's requests, the other control host's certificate name and address), or leave [failover] out")
	}
	host, port, err := net.SplitHostPort(*ff.Listen)
	if err != nil || port == "" || port == "0" {
		return fmt.Errorf("failover.listen: %q must be host:port, such as \"10.0.0.1:7711\"", *ff.Listen)
	}
	o.Listen, o.Advertise = *ff.Listen, *ff.Listen
	if set(ff.Advertise) {
		if _, p, err := net.SplitHostPort(*ff.Advertise); err != nil || p == "" || p == "0" {
			return fmt.Errorf("failover.advertise: %q must be host:port, the address of failover.listen as the other control host reaches it", *ff.Advertise)
		}
		o.Advertise = *ff.Advertise
	} else if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("failover.advertise: missing; failover.listen %q names no address the other control host could reach: give this host's address there, or in advertise", *ff.Listen)
	}
	if net.ParseIP(*ff.PeerAddress) == nil {
		return fmt.Errorf("failover.peer_address: %q must be the other control host's IP address, as the RSA nodes see it", *ff.PeerAddress)
	}
	if strings.ContainsAny(*ff.Peer, " \t\n,/") {
		return fmt.Errorf("failover.peer: %q must be the name in the other control host's certificate (rsa ca issue NAME --role control)", *ff.Peer)
	}
	o.Peer, o.PeerAddress = *ff.Peer, *ff.PeerAddress
	return nil
}

func parseNotify(f *file, n *Notify) error {
	fn := f.Notify
	if err := SetPath("notify.program", fn.Program, &n.Program); err != nil {
		return err
	}
	n.HeldAfter, n.Timeout = DefaultNotifyHeldAfter, 30*time.Second
	if fn.HeldAfter != nil {
		d, err := units.ParseDuration(*fn.HeldAfter)
		if err != nil || (d != 0 && d < time.Hour) {
			return fmt.Errorf("notify.held_after: %q must be a duration of an hour or more, such as \"24h\" (0: no reminders)", *fn.HeldAfter)
		}
		n.HeldAfter = d
	}
	if fn.Timeout != nil {
		d, err := units.ParseDuration(*fn.Timeout)
		if err != nil || d < time.Second || d > 10*time.Minute {
			return fmt.Errorf("notify.timeout: %q must be a duration between 1s and 10m", *fn.Timeout)
		}
		n.Timeout = d
	}
	return nil
}

func parseSlurm(f *file, s *Slurm) error {
	fs := f.Slurm
	for _, u := range fs.Users {
		if u == "" || strings.ContainsAny(u, " \t\n/:") {
			return fmt.Errorf("slurm.users: %q is not a user name", u)
		}
	}
	s.Users = fs.Users
	if fs.Pool != nil {
		if *fs.Pool == "" || strings.ContainsAny(*fs.Pool, " \t\n\"") {
			return fmt.Errorf("slurm.pool: %q must be a single word", *fs.Pool)
		}
		s.Pool = *fs.Pool
	}
	for _, d := range []struct {
		key string
		v   *string
		dst *time.Duration
		min time.Duration
	}{{"slurm.poll_interval", fs.PollInterval, &s.PollInterval, 100 * time.Millisecond}, {"slurm.stage_in_lead", fs.StageInLead, &s.StageInLead, 0}, {"slurm.capacity_wait", fs.CapacityWait, &s.CapacityWait, 0}, {"slurm.estimate_wait", fs.EstimateWait, &s.EstimateWait, 0}, {"slurm.prolog_grace", fs.PrologGrace, &s.PrologGrace, 0}} {
		if d.v == nil {
			continue
		}
		v, err := units.ParseDuration(*d.v)
		if err != nil || v < d.min {
			return fmt.Errorf("%s: %q must be a duration of at least %s", d.key, *d.v, d.min)
		}
		*d.dst = v
	}
	if fs.StageRate != nil {
		n, err := units.ParseSize(*fs.StageRate)
		if err != nil || n <= 0 {
			return fmt.Errorf("slurm.stage_rate: %q must be a size per second such as \"1G\"", *fs.StageRate)
		}
		s.StageRate = n
	}
	for _, e := range []error{
		SetPath("slurm.node_namespaces", fs.NodeNamespaces, &s.NodeNamespaces),
		SetPath("slurm.bin", fs.Bin, &s.Bin),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// finish fills what depends on other keys or on the machine.
func (c *Config) finish() error {
	if c.MinJobNodes == 0 {
		// The thesis' rule (App. P l.10-12): a job smaller than one
		// proportion earns less than one whole RSA node.
		c.MinJobNodes = c.Proportion
	}
	if len(c.Nodes) == 0 {
		capacity, err := ParseCapacity("50%")
		if err != nil {
			return fmt.Errorf("sizing the embedded local node: %w", err)
		}
		c.Nodes = []Node{{Name: "local", Engine: "local", Capacity: capacity}}
	}
	if c.Failover.Enabled() && c.Engine != "gluster" {
		return fmt.Errorf("failover: engine %q keeps its RAMDISKs in this host's RAM, which a takeover cannot reach; failover needs engine \"gluster\" (or leave [failover] out)", c.Engine)
	}
	if within(c.RamdiskRoot, c.StateDir) || within(c.StateDir, c.RamdiskRoot) {
		return fmt.Errorf("ramdisk_root %s and state_dir %s must not contain each other", c.RamdiskRoot, c.StateDir)
	}
	return nil
}

// within reports whether the clean absolute path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// ParseCapacity reads a node's capacity as nodes[].capacity writes it:
// "64G", or "50%" of the RAM available now on this host; at least 1M
// either way.
func ParseCapacity(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("missing (write a size such as 64G, or a share of available RAM such as 50%%)")
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p <= 0 || p > 90 {
			return 0, fmt.Errorf("%q: a share of RAM must be between 0%% and 90%%", s)
		}
		avail, err := MemAvailable()
		if err != nil {
			return 0, err
		}
		n := int64(float64(avail) * p / 100)
		if n < 1<<20 {
			return 0, fmt.Errorf("%q of the RAM available now (%s) is below 1M", s, units.FormatSize(avail))
		}
		return n, nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n < 1<<20 {
		return 0, fmt.Errorf("%q is below 1M", s)
	}
	return n, nil
}

// MemAvailable reads MemAvailable from /proc/meminfo, in bytes.
func MemAvailable() (int64, error) { return memInfo("MemAvailable") }

// MemTotal reads MemTotal from /proc/meminfo, in bytes: all the RAM the
// kernel manages on this host.
func MemTotal() (int64, error) { return memInfo("MemTotal") }

func memInfo(key string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", key, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s: %w", key, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/meminfo", key)
}
