// Package alloc decides which RSA nodes' RAM a job gets (thesis §3.2.1 and
// App. P): whole nodes in proportion to the job's compute nodes, or an
// explicit capacity. It is pure: the caller passes what is in use, derived
// from the jobs that hold capacity, and commits the decision.
package alloc

import (
	"fmt"
	"sort"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Verdict is what became of a request.
type Verdict int

const (
	Assign     Verdict = iota // Parts holds the allocation
	Wait                      // not enough free now; try again later (§3.2.1)
	Ineligible                // never: the job runs without RSA
)

// Decision is Plan's answer.
type Decision struct {
	Verdict Verdict
	Parts   []job.Part
	Reason  string
}

// Request is what a job asks for.
type Request struct {
	ComputeNodes int
	Capacity     int64 // explicit; 0 means by proportion
	Running      bool  // already running: only output can still use RAM
	HasInput     bool
	HasOutput    bool
}

// Policy is the site's allocation rule.
type Policy struct {
	Proportion     int
	MinJobNodes    int
	MaxJobCapacity int64
	// Even spreads an explicit capacity that no one node holds in equal
	// parts: Gluster places files by name, not by free space, so a small
	// part would fill up while the others are empty.
	Even bool
	// Replica (2) keeps every file on two nodes: a job is given its
	// capacity twice, in parts that pair up on different nodes.
	Replica int
}

// PolicyFrom takes the rule from the config and from the engine's needs
// (engine.Placer; the zero Placement for an engine without any).
func PolicyFrom(c *config.Config, pl engine.Placement) Policy {
	return Policy{Proportion: c.Proportion, MinJobNodes: c.MinJobNodes, MaxJobCapacity: c.Limits.MaxJobCapacity,
		Even: pl.Even, Replica: pl.Replica}
}

// Plan decides for one request given the nodes and the bytes in use on each.
func Plan(p Policy, nodes []config.Node, used map[string]int64, r Request) Decision {
	if !r.HasInput && !r.HasOutput {
		return Decision{Verdict: Ineligible, Reason: "no input or output directory given"}
	}
	if r.Running && !r.HasOutput {
		return Decision{Verdict: Ineligible, Reason: "job already running and has no output directory"}
	}
	var total int64
	for _, n := range nodes {
		total += n.Capacity
	}
	if r.Capacity > 0 {
		if p.MaxJobCapacity > 0 && r.Capacity > p.MaxJobCapacity {
			return Decision{Verdict: Ineligible, Reason: fmt.Sprintf("requests %s, above the site limit of %s per job (limits.max_job_capacity)",
				units.FormatSize(r.Capacity), units.FormatSize(p.MaxJobCapacity))}
		}
		if r.Capacity > total {
			return Decision{Verdict: Ineligible, Reason: fmt.Sprintf("requests %s, more than the accelerator's %s", units.FormatSize(r.Capacity), units.FormatSize(total))}
		}
		if p.Replica > 1 || p.Even {
			return evenly(nodes, used, r.Capacity, max(p.Replica, 1))
		}
		return byCapacity(nodes, used, r.Capacity)
	}
	if r.ComputeNodes < p.MinJobNodes {
		return Decision{Verdict: Ineligible, Reason: fmt.Sprintf("too small to earn an RSA node: %d compute node(s), %d needed (proportion %d); request RAM explicitly with a capacity",
			r.ComputeNodes, p.MinJobNodes, p.Proportion)}
	}
	want := (r.ComputeNodes + p.Proportion - 1) / p.Proportion
	if p.Replica > 1 {
		want = max(want, p.Replica) // whole nodes in pairs: each holds a copy
		want -= want % p.Replica
	}
	if want > len(nodes) {
		want = len(nodes) // the whole accelerator is the most a job can get
	}
	if p.Replica > 1 && want < p.Replica {
		return Decision{Verdict: Ineligible, Reason: fmt.Sprintf("cluster.replica %d needs %d RSA nodes, the accelerator has %d", p.Replica, p.Replica, len(nodes))}
	}
	var parts []job.Part
	for _, n := range nodes {
		if used[n.Name] == 0 {
			parts = append(parts, job.Part{Node: n.Name, Bytes: n.Capacity})
			if len(parts) == want {
				return Decision{Verdict: Assign, Parts: capParts(parts, p.MaxJobCapacity)}
			}
		}
	}
	return Decision{Verdict: Wait, Reason: fmt.Sprintf("waiting for %d free RSA node(s), %d free now", want, len(parts))}
}

// capParts trims whole-node parts to the site's per-job limit (0: none),
// spreading what is allowed evenly over the nodes.
func capParts(parts []job.Part, limit int64) []job.Part {
	var total int64
	for _, p := range parts {
		total += p.Bytes
	}
	if limit <= 0 || total <= limit {
		return parts
	}
	each := limit / int64(len(parts)) &^ (1<<20 - 1) // whole MiB
	each = max(each, 1<<20)
	for i := range parts {
		parts[i].Bytes = min(parts[i].Bytes, each)
	}
	return parts
}

// byCapacity fits an explicit request on the node with the least free RAM
// that holds it whole (keeping big holes for big jobs); failing that, it
// spreads the request over the freest nodes, which a multi-node engine
// aggregates.
func byCapacity(nodes []config.Node, used map[string]int64, want int64) Decision {
	cs, free := freeNodes(nodes, used)
	if free < want {
		return Decision{Verdict: Wait, Reason: fmt.Sprintf("waiting for %s of RSA RAM, %s free now", units.FormatSize(want), units.FormatSize(free))}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].free < cs[j].free })
	for _, c := range cs {
		if c.free >= want {
			return Decision{Verdict: Assign, Parts: []job.Part{{Node: c.name, Bytes: want}}}
		}
	}
	var parts []job.Part
	for i := len(cs) - 1; i >= 0 && want > 0; i-- {
		take := min(cs[i].free, want)
		parts = append(parts, job.Part{Node: cs[i].name, Bytes: take})
		want -= take
	}
	return Decision{Verdict: Assign, Parts: parts}
}

// evenly gives an explicit request copies times over, in equal parts on
// distinct nodes, as few as hold it: the fewest parts (a multiple of
// copies) whose share each of the freest nodes still has. Consecutive
// parts are on different nodes, so each pair can be a replica set.
func evenly(nodes []config.Node, used map[string]int64, want int64, copies int) Decision {
	cs, free := freeNodes(nodes, used)
	if len(nodes) < copies {
		return Decision{Verdict: Ineligible, Reason: fmt.Sprintf("%d copies of every file need %d RSA nodes, the accelerator has %d", copies, copies, len(nodes))}
	}
	total := want * int64(copies)
	if free < total {
		return Decision{Verdict: Wait, Reason: fmt.Sprintf("waiting for %s of RSA RAM (%s × %d copies), %s free now",
			units.FormatSize(total), units.FormatSize(want), copies, units.FormatSize(free))}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].free > cs[j].free })
	for k := copies; k <= len(cs); k += copies {
		each := (total + int64(k) - 1) / int64(k)
		each = (each + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB
		if cs[k-1].free < each {
			continue
		}
		parts := make([]job.Part, k)
		for i := range parts {
			parts[i] = job.Part{Node: cs[i].name, Bytes: each}
		}
		return Decision{Verdict: Assign, Parts: parts}
	}
	return Decision{Verdict: Wait, Reason: fmt.Sprintf("waiting for %s of RSA RAM in equal parts on %d or more nodes; the free RAM is scattered too unevenly now",
		units.FormatSize(total), copies)}
}

// cand is a node with free RAM.
type cand struct {
	name string
	free int64
}

// freeNodes are the nodes with RAM free, and how much is free in all.
func freeNodes(nodes []config.Node, used map[string]int64) ([]cand, int64) {
	var cs []cand
	var free int64
	for _, n := range nodes {
		if f := n.Capacity - used[n.Name]; f > 0 {
			cs = append(cs, cand{n.Name, f})
			free += f
		}
	}
	return cs, free
}
