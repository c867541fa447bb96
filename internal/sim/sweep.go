package sim

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/units"
)

// Axis is one swept parameter and its values, as written on the command
// line (--sweep rsa-nodes=4,8,16).
type Axis struct {
	Key    string
	Values []string
}

// sweepKeys are the parameters a sweep may vary, with how each applies.
func sweepKeys() map[string]func(c *Config, v string) error {
	return map[string]func(c *Config, v string) error{
		"rsa-nodes": func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("rsa-nodes=%s: want a count of nodes, 0 or more", v)
			}
			c.RSA.Nodes = n
			return nil
		},
		"ram": func(c *Config, v string) error {
			n, err := units.ParseSize(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("ram=%s: want a size per RSA node, e.g. 32G", v)
			}
			c.RSA.RAM = n
			return nil
		},
		"proportion": func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("proportion=%s: want compute nodes per RSA node, at least 1", v)
			}
			c.RSA.Proportion = n
			return nil
		},
		"link": func(c *Config, v string) error {
			r, err := ParseRate(v)
			if err != nil {
				return fmt.Errorf("link=%s: %w", v, err)
			}
			c.RSA.Link = r
			return nil
		},
	}
}

// ParseSweep reads --sweep KEY=V1,V2 arguments; a key given twice is an
// error, as its values would be ambiguous.
func ParseSweep(specs []string) ([]Axis, error) {
	keys := sweepKeys()
	var axes []Axis
	seen := map[string]bool{}
	for _, s := range specs {
		k, vs, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		apply, known := keys[k]
		if !ok || !known {
			return nil, fmt.Errorf("--sweep %q: write KEY=V1,V2,... with KEY one of rsa-nodes, ram, proportion, link", s)
		}
		if seen[k] {
			return nil, fmt.Errorf("--sweep %s given twice: list all its values in one --sweep %s=V1,V2", k, k)
		}
		seen[k] = true
		a := Axis{Key: k}
		for v := range strings.SplitSeq(vs, ",") {
			v = strings.TrimSpace(v)
			if err := apply(&Config{}, v); err != nil {
				return nil, fmt.Errorf("--sweep: %w", err)
			}
			a.Values = append(a.Values, v)
		}
		axes = append(axes, a)
	}
	return axes, nil
}

// SweepRun is one point of a sweep.
type SweepRun struct {
	Values []string `json:"values"` // one per axis, in the axes' order
	Result *Result  `json:"result"`
}

// Sweep runs cfg at every combination of the axes' values, the first axis
// varying slowest, each by run: RunTrace on an SWF file opened afresh, or
// a Trace's Run.
func Sweep(ctx context.Context, run Runner, cfg Config, axes []Axis) ([]SweepRun, error) {
	keys := sweepKeys()
	var runs []SweepRun
	var rec func(i int, c Config, vals []string) error
	rec = func(i int, c Config, vals []string) error {
		if i == len(axes) {
			r, err := run(ctx, c)
			if err != nil {
				return fmt.Errorf("sweep %s: %w", strings.Join(vals, " "), err)
			}
			runs = append(runs, SweepRun{Values: append([]string(nil), vals...), Result: r})
			return nil
		}
		for _, v := range axes[i].Values {
			c := c
			if err := keys[axes[i].Key](&c, v); err != nil {
				return err
			}
			if err := rec(i+1, c, append(vals, v)); err != nil {
				return err
			}
		}
		return nil
	}
	return runs, rec(0, cfg, nil)
}

// RunTrace is Run on a trace that open gives afresh.
func RunTrace(ctx context.Context, open func() (io.ReadCloser, error), cfg Config) (*Result, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Run(ctx, f, cfg)
}
