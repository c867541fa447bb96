package thesis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// T55 is the thesis' Table 5.5: bonnie++ on one RSA node's RAMDISK (ext2
// on /dev/ram0; here ram-blk, ext2 on a loop device over a tmpfs file),
// and beside it on ram (tmpfs, what an RSA node is today) and disk.
// bonnie++ is itself the tool; its block write is cross-checked with fio.
type T55 struct {
	Targets []Place
	SizeMiB int // -s: the file bonnie++ writes, MiB; it must fit in the target
	RAMMiB  int // -r: the RAM bonnie++ assumes (it wants -s at least twice it)
	Files   int // -n: files for the create tests, in multiples of 1,024
	Runs    int
	Fio     bool // fio's sequential write of -s in bonnie++'s chunk size, once a target
}

// Run runs bonnie++ on each target Runs times and returns the rows.
func (t T55) Run(ctx context.Context) ([]bench.Row, error) {
	res := map[string][]BonnieResult{}
	check := map[string]float64{}
	for i := range max(t.Runs, 1) {
		for _, p := range t.Targets {
			r, err := t.bonnie(ctx, p.Dir)
			if err != nil {
				return nil, fmt.Errorf("T55 on %s, run %d: %w", p.Name, i+1, err)
			}
			res[p.Name] = append(res[p.Name], r)
		}
	}
	if t.Fio {
		for _, p := range t.Targets {
			chunk := int64(8192)
			if rs := res[p.Name]; len(rs) > 0 && rs[0].ChunkSize > 0 {
				chunk = rs[0].ChunkSize
			}
			v, err := t.fio(ctx, p.Dir, chunk)
			if err != nil {
				return nil, err
			}
			check[p.Name] = v
		}
	}
	return t.rows(res, check), nil
}

// bonnie runs bonnie++ once, fast mode (no per-character tests), in a
// directory of its own under dir.
func (t T55) bonnie(ctx context.Context, dir string) (BonnieResult, error) {
	d, err := os.MkdirTemp(dir, "t55-")
	if err != nil {
		return BonnieResult{}, err
	}
	defer os.RemoveAll(d)
	args := []string{"-d", d, "-s", strconv.Itoa(t.SizeMiB), "-r", strconv.Itoa(t.RAMMiB), "-n", strconv.Itoa(t.Files), "-u", "root", "-f", "-q"}
	if err := cleanStart(ctx); err != nil {
		return BonnieResult{}, err
	}
	cmd := exec.CommandContext(ctx, "bonnie++", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return BonnieResult{}, fmt.Errorf("bonnie++ %s: %w: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 4))
	}
	return ParseBonnieCSV(stdout.Bytes())
}

// lastLines is the last n lines of s, for an error.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(len(l)-n, 0):], " | ")
}

// fio writes -s sequentially in bonnie++'s chunk size, fsync'd at the end
// as bonnie++'s block write is; MiB/s.
func (t T55) fio(ctx context.Context, dir string, chunk int64) (float64, error) {
	d, err := os.MkdirTemp(dir, "t55-fio-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(d)
	if err := cleanStart(ctx); err != nil {
		return 0, err
	}
	_, w, err := runFio(ctx, "--name=t55", "--directory="+d, "--rw=write", "--bs="+strconv.FormatInt(chunk, 10),
		"--size="+strconv.Itoa(t.SizeMiB)+"m", "--numjobs=1", "--end_fsync=1")
	if err != nil {
		return 0, fmt.Errorf("T55 fio on %s: %w", dir, err)
	}
	return w.MiBps, nil
}

// rows turns bonnie++'s runs (by target) into rows. Its K/sec are KiB/s;
// the thesis' "MBytes/sec" are read as MiB/s (bonnie++ printed K/sec,
// which the thesis divided down), set beside ram-blk, its RAMDISK.
func (t T55) rows(res map[string][]BonnieResult, check map[string]float64) []bench.Row {
	params := map[string]string{"size": strconv.Itoa(t.SizeMiB) + "M", "ram": strconv.Itoa(t.RAMMiB) + "M",
		"files": strconv.Itoa(t.Files) + "k", "tool": "bonnie++ -f"}
	type metric struct {
		name, field, unit string
		value             func(BonnieResult) float64
		src               float64
		ref               string
	}
	metrics := []metric{
		{"block_write", "put_block", "MiB/s", func(r BonnieResult) float64 { return r.PutBlock / 1024 }, 867, "THESIS T5.5 Write"},
		{"rewrite", "rewrite", "MiB/s", func(r BonnieResult) float64 { return r.Rewrite / 1024 }, 1163, "THESIS T5.5 Rewrite"},
		{"block_read", "get_block", "MiB/s", func(r BonnieResult) float64 { return r.GetBlock / 1024 }, 3484, "THESIS T5.5 Read"},
		{"seq_create", "seq_create", "ops/s", func(r BonnieResult) float64 { return r.SeqCreate }, 7470, "THESIS T5.5 File creation per second"},
	}
	ratios := []struct {
		name, num, den string
		src            float64
		ref            string
	}{
		{"rewrite/write", "rewrite", "put_block", 1.34, "THESIS T5.5 (derived: 1163 / 867)"},
		{"read/write", "get_block", "put_block", 4.0, "THESIS T5.5 (derived: 3484 / 867)"},
	}
	byField := map[string]metric{}
	for _, m := range metrics {
		byField[m.field] = m
	}
	var rows []bench.Row
	for _, p := range t.Targets {
		rs := res[p.Name]
		thesis := p.Name == "ram-blk"
		var untimed []string
		first := len(rows)
		for _, m := range metrics {
			var runs []float64
			for _, r := range rs {
				if r.Measured[m.field] {
					runs = append(runs, m.value(r))
				}
			}
			if len(runs) == 0 {
				untimed = append(untimed, m.name)
				continue
			}
			row := bench.Row{Bench: "thesis", Case: "T55", Target: p.Name, Params: params, Metric: m.name, Unit: m.unit,
				Value: bench.Median(runs), Runs: runs}
			if thesis {
				row.Source(m.ref, m.src, m.unit)
			}
			if m.field == "put_block" {
				if v, ok := check[p.Name]; ok {
					row.CrossCheck("fio", v)
					row.Note = "fio --rw=write in bonnie++'s chunk size, --end_fsync=1 " + fioNoFallocate + ", once"
				}
				if thesis {
					row.Note = joinNote(row.Note, "the thesis' MBytes/sec read as MiB/s (bonnie++ reports K/sec, KiB)")
				}
			}
			rows = append(rows, row)
		}
		for _, q := range ratios {
			var runs []float64
			for _, r := range rs {
				if r.Measured[q.num] && r.Measured[q.den] {
					runs = append(runs, byField[q.num].value(r)/byField[q.den].value(r))
				}
			}
			if len(runs) == 0 {
				continue
			}
			row := bench.Row{Bench: "thesis", Case: "T55", Target: p.Name, Params: params, Metric: q.name, Unit: "x",
				Value: bench.Median(runs), Runs: runs}
			if thesis {
				row.Source(q.ref, q.src, "x")
			}
			rows = append(rows, row)
		}
		if len(untimed) == 0 {
			continue
		}
		note := "bonnie++ printed +++++ (done in under 500 ms, not timed) for " + strings.Join(untimed, ", ") + ": a larger -s or -n times it"
		if len(rows) == first {
			// Nothing timed: a row that says so, rather than none.
			rows = append(rows, bench.Row{Bench: "thesis", Case: "T55", Target: p.Name, Params: params, Metric: "untimed",
				Unit: "tests", Value: float64(len(untimed))})
		}
		rows[first].Note = joinNote(rows[first].Note, note)
	}
	return rows
}
