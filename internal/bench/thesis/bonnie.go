package thesis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BonnieResult is one line of bonnie++'s CSV (format 1.98, bonnie++
// 2.00a; bon_csv2txt reads the same fields). Rates are in KiB/s and
// files/s, as bonnie++ writes them. A test that finished in under 500 ms
// is "+++++" in the CSV (bonnie++ will not print a rate it cannot time):
// its field stays 0 here, and Measured says which were timed.
type BonnieResult struct {
	Version   string // bonnie++'s own, "2.00a"
	Name      string // -m, the host name by default
	Size      string // -s as bonnie++ prints it, "1G"
	ChunkSize int64  // bytes per block read or write

	PutBlock  float64 // Sequential Output, Block: KiB/s
	Rewrite   float64 // Sequential Output, Rewrite: KiB/s
	GetBlock  float64 // Sequential Input, Block: KiB/s
	SeqCreate float64 // Sequential Create, Create: files/s

	// Measured holds the fields above that bonnie++ timed, by name:
	// "put_block", "rewrite", "get_block", "seq_create".
	Measured map[string]bool
}

// bonnieCSVVersion is the CSV format bonnie++ 2.00a writes.
const bonnieCSVVersion = "1.98"

// ParseBonnieCSV parses the CSV line bonnie++ -q prints on standard
// output. Field numbers are bon_csv2txt's: 5 size, 7 chunk size, 11
// block output, 13 rewrite, 17 block input, 26 sequential create.
func ParseBonnieCSV(out []byte) (BonnieResult, error) {
	var r BonnieResult
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, bonnieCSVVersion+",") {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		return r, fmt.Errorf("bonnie++: no CSV line of format %s in its output", bonnieCSVVersion)
	}
	f := strings.Split(line, ",")
	if len(f) < 38 {
		return r, fmt.Errorf("bonnie++: CSV line of %d fields, want at least 38: %q", len(f), line)
	}
	r.Version, r.Name, r.Size = f[1], f[2], f[5]
	if f[7] != "" {
		n, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return r, fmt.Errorf("bonnie++: chunk size %q: %w", f[7], err)
		}
		r.ChunkSize = n
	}
	r.Measured = map[string]bool{}
	var errs []error
	for _, x := range []struct {
		name string
		i    int
		v    *float64
	}{{"put_block", 11, &r.PutBlock}, {"rewrite", 13, &r.Rewrite}, {"get_block", 17, &r.GetBlock}, {"seq_create", 26, &r.SeqCreate}} {
		s := f[x.i]
		if s == "" || strings.HasPrefix(s, "+") {
			// Not run (-f, -n 0), or too quick to time.
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("bonnie++: %s %q: %w", x.name, s, err))
			continue
		}
		*x.v = v
		r.Measured[x.name] = true
	}
	return r, errors.Join(errs...)
}
