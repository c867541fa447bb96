package config

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// FuzzParse: any file either is refused or gives a Config whose paths are
// clean and absolute and whose every value, written back as TOML, parses
// to the same Config: what Parse accepts, it accepts again. It parses with
// testEngines, so an engine's tables are fuzzed too. The seeds are in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := parse(doc)
		if err != nil {
			if c != nil {
				t.Fatalf("a config and an error (%v)", err)
			}
			return
		}
		paths := map[string]string{"state_dir": c.StateDir, "socket": c.Socket, "ramdisk_root": c.RamdiskRoot}
		for i, p := range c.AllowedPaths {
			paths["allowed_paths["+strconv.Itoa(i)+"]"] = p
		}
		if c.Slurm.NodeNamespaces != "" {
			paths["slurm.node_namespaces"] = c.Slurm.NodeNamespaces
		}
		if c.Slurm.Bin != "" {
			paths["slurm.bin"] = c.Slurm.Bin
		}
		for k, p := range paths {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("%s = %q is not a clean absolute path", k, p)
			}
		}
		if under(c.StateDir, c.RamdiskRoot) || under(c.RamdiskRoot, c.StateDir) {
			t.Fatalf("state_dir %q and ramdisk_root %q contain each other", c.StateDir, c.RamdiskRoot)
		}
		again, err := parse(encode(t, c))
		if err != nil {
			t.Fatalf("accepted, but not once written back: %v\n%s", err, encode(t, c))
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("written back and parsed again, the config changed:\n%+v\n%+v", c, again)
		}
	})
}

// under is config.within the long way round, to check it.
func under(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// encode writes every value of c as the key Parse reads it from; sizes as
// plain bytes, durations as Go durations.
func encode(t *testing.T, c *Config) []byte {
	t.Helper()
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	dur := func(d time.Duration) string { return d.String() }
	var nodes []map[string]any
	for _, n := range c.Nodes {
		node := map[string]any{"name": n.Name, "engine": n.Engine, "capacity": size(n.Capacity)}
		if n.Address != "" {
			node["address"] = n.Address
		}
		nodes = append(nodes, node)
	}
	l := c.Limits
	limits := map[string]any{
		"max_active_jobs": l.MaxActiveJobs, "max_jobs_per_user": l.MaxJobsPerUser,
		"stage_timeout": dur(l.StageTimeout), "unstarted_expiry": dur(l.UnstartedExpiry), "kill_grace": dur(l.KillGrace),
		"bytes_per_inode": size(l.BytesPerInode),
		"max_connections": l.MaxConnections, "max_connections_per_user": l.MaxConnectionsPerUser,
		// The stage limits' 0 is "no limit" and is written as such.
		"stage_memory": size(l.StageMemory), "stage_pids": l.StagePids,
		"stage_cpu": strconv.FormatFloat(float64(l.StageCPU)/1000, 'f', -1, 64), "stage_network": l.StageNetwork,
	}
	// 0 is "no cap", which has no spelling but leaving the key out.
	if l.MaxJobCapacity != 0 {
		limits["max_job_capacity"] = size(l.MaxJobCapacity)
	}
	if l.MaxUserCapacity != 0 {
		limits["max_user_capacity"] = size(l.MaxUserCapacity)
	}
	if l.StageBWLimit != 0 {
		limits["stage_bwlimit"] = size(l.StageBWLimit)
	}
	s := c.Slurm
	slurm := map[string]any{"pool": s.Pool, "poll_interval": dur(s.PollInterval), "stage_in_lead": dur(s.StageInLead), "stage_rate": size(s.StageRate), "estimate_wait": dur(s.EstimateWait)}
	if s.Users != nil {
		slurm["users"] = s.Users
	}
	if s.NodeNamespaces != "" {
		slurm["node_namespaces"] = s.NodeNamespaces
	}
	if s.Bin != "" {
		slurm["bin"] = s.Bin
	}
	doc := map[string]any{
		"state_dir": c.StateDir, "socket": c.Socket, "ramdisk_root": c.RamdiskRoot,
		"scheduler": c.Scheduler, "proportion": c.Proportion, "min_job_nodes": c.MinJobNodes,
		"default_delay": dur(c.DefaultDelay), "tick": dur(c.Tick), "log_level": c.LogLevel,
		"private_data": c.PrivateData, "nodes": nodes, "limits": limits, "slurm": slurm,
		"engine": c.Engine,
	}
	if r, ok := c.EngineConfig.(*remote); ok {
		doc["far"] = map[string]any{"port": r.Port}
		var hosts []map[string]any
		for _, h := range r.Hosts {
			hosts = append(hosts, map[string]any{"name": h})
		}
		doc["hosts"] = hosts
	}
	if c.AllowedPaths != nil {
		doc["allowed_paths"] = c.AllowedPaths
	}
	if c.RefusedFSTypes != nil {
		doc["refused_fs_types"] = c.RefusedFSTypes
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		t.Fatalf("encoding %+v: %v", c, err)
	}
	return b.Bytes()
}
