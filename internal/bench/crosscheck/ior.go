// Package crosscheck runs IOR and mdtest, the storage benchmarks the HPC
// field trusts, and parses what they report, so that rsa-lab bench can set its
// own numbers beside theirs on the same target.
//
// The tools are third_party/ior, built by scripts/build-ior.sh into a
// prefix outside the checkout; they are separate programs (GPL-2.0) that
// rsa only execs, never links.
package crosscheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// IORResult is what one ior run reports with -O summaryFormat=JSON.
type IORResult struct {
	Version string // IOR's own version, "4.1.0+dev"
	Command string // the command line as IOR echoes it
	Tests   []IORTest
}

// IORTest is one test of a run: a run has one per -f script section, and
// one alone without a script.
type IORTest struct {
	ID           int
	API          string // "POSIX", "MPIIO", ...
	Path         string // the first task's test file
	Nodes        int
	Tasks        int
	Repetitions  int   // iterations asked for (-i)
	FilePerProc  bool  // -F
	Segments     int   // -s
	BlockSize    int64 // bytes per task and segment (-b)
	TransferSize int64 // bytes per call (-t)

	// Iterations holds one entry per operation and iteration, in the order
	// IOR ran them (write, read, write, read, ...).
	Iterations []IORIteration

	// Summary holds one entry per operation, over all iterations: IOR's
	// "Summary of all tests".
	Summary []IOROp
}

// IORIteration is one operation of one iteration, as IOR's results table
// has it. IOR's JSON prints times with four decimals: an open of less than
// 50 µs reads as 0.
type IORIteration struct {
	Op        string  // "write" or "read"
	Iteration int     // 0-based, counted per Op
	MiBps     float64 // bandwidth of all tasks, MiB/s
	IOPS      float64
	Latency   float64 // seconds
	Open      float64 // seconds spent opening
	WrRd      float64 // seconds spent writing or reading
	Close     float64 // seconds spent closing
	Total     float64 // seconds
}

// IOROp is one operation over all iterations of a test.
type IOROp struct {
	Op           string // "write" or "read"
	Iterations   int    // how many iterations the figures cover
	MaxMiBps     float64
	MinMiBps     float64
	MeanMiBps    float64
	StdDevMiBps  float64
	MaxOPs       float64 // transfers per second
	MinOPs       float64
	MeanOPs      float64
	StdDevOPs    float64
	MeanTime     float64 // seconds per iteration
	AggregateMiB float64 // MiB all tasks moved in one iteration
}

// Op returns the summary of operation op ("write", "read") of the test.
func (t *IORTest) Op(op string) (IOROp, bool) {
	for _, s := range t.Summary {
		if s.Op == op {
			return s, true
		}
	}
	return IOROp{}, false
}

// ParseIOR parses the output of ior -O summaryFormat=JSON: the summary
// file, or standard output when there is none. Text before the JSON object
// (mpirun's notes, "Writing output to ...") is skipped, and so is text
// after it.
//
// IOR prints its warnings ("WARNING: ...") to standard output as well, in
// the middle of the JSON: standard output then fails to parse, and the
// summary file (-O summaryFile=, as RunIOR uses) is the way out.
func ParseIOR(out []byte) (*IORResult, error) {
	start := bytes.Index(out, []byte("{\n"))
	if start < 0 {
		return nil, errors.New("crosscheck: no JSON object in IOR output (was it run with -O summaryFormat=JSON?)")
	}
	// IOR prints a value that is not finite with %.4f: it quotes inf
	// itself, but not nan, which no JSON parser takes. Its format is
	// always `"key": value`, so the bare token follows `": `.
	doc := bytes.ReplaceAll(out[start:], []byte(`": -nan`), []byte(`": "-nan"`))
	doc = bytes.ReplaceAll(doc, []byte(`": nan`), []byte(`": "nan"`))

	var raw iorJSON
	if err := json.NewDecoder(bytes.NewReader(doc)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("crosscheck: IOR output is not the JSON of a finished run (aborted, or warnings inside it?): %w", err)
	}
	if len(raw.Tests) == 0 {
		return nil, errors.New("crosscheck: IOR output has no tests")
	}
	res := &IORResult{Version: raw.Version, Command: raw.CommandLine}
	for _, rt := range raw.Tests {
		t := IORTest{
			ID:           rt.TestID,
			API:          rt.Parameters.API,
			Path:         rt.Path,
			Nodes:        rt.Options.Nodes,
			Tasks:        rt.Options.Tasks,
			Repetitions:  rt.Parameters.Repetitions,
			FilePerProc:  rt.Parameters.FilePerProc != 0,
			Segments:     rt.Parameters.SegmentCount,
			BlockSize:    rt.Parameters.BlockSize,
			TransferSize: rt.Parameters.TransferSize,
		}
		// The JSON has no iteration number: IOR writes each iteration's
		// operations in turn, so counting per operation recovers it.
		seen := make(map[string]int)
		for _, r := range rt.Results {
			t.Iterations = append(t.Iterations, IORIteration{
				Op:        r.Access,
				Iteration: seen[r.Access],
				MiBps:     float64(r.BwMiB),
				IOPS:      float64(r.IOPS),
				Latency:   float64(r.Latency),
				Open:      float64(r.OpenTime),
				WrRd:      float64(r.WrRdTime),
				Close:     float64(r.CloseTime),
				Total:     float64(r.TotalTime),
			})
			seen[r.Access]++
		}
		for _, s := range raw.Summary {
			if s.TestID != rt.TestID {
				continue
			}
			t.Summary = append(t.Summary, IOROp{
				Op:           s.Operation,
				Iterations:   s.Repetitions,
				MaxMiBps:     float64(s.BwMaxMIB),
				MinMiBps:     float64(s.BwMinMIB),
				MeanMiBps:    float64(s.BwMeanMIB),
				StdDevMiBps:  float64(s.BwStdMIB),
				MaxOPs:       float64(s.OPsMax),
				MinOPs:       float64(s.OPsMin),
				MeanOPs:      float64(s.OPsMean),
				StdDevOPs:    float64(s.OPsSD),
				MeanTime:     float64(s.MeanTime),
				AggregateMiB: float64(s.XsizeMiB),
			})
		}
		if len(t.Summary) == 0 && len(t.Iterations) > 0 {
			return nil, fmt.Errorf("crosscheck: IOR output has results but no summary for test %d", t.ID)
		}
		res.Tests = append(res.Tests, t)
	}
	return res, nil
}

// iorJSON is the part of IOR's JSON (src/ior-output.c) that we read. Its
// keys are IOR's, spaces and case included.
type iorJSON struct {
	Version     string `json:"Version"`
	CommandLine string `json:"Command line"`
	Tests       []struct {
		TestID     int    `json:"TestID"`
		Path       string `json:"Path"`
		Parameters struct {
			API          string `json:"api"`
			Repetitions  int    `json:"repetitions"`
			FilePerProc  int    `json:"filePerProc"`
			SegmentCount int    `json:"segmentCount"`
			TransferSize int64  `json:"transferSize"`
			BlockSize    int64  `json:"blockSize"`
		} `json:"Parameters"`
		Options struct {
			Nodes int `json:"nodes"`
			Tasks int `json:"tasks"`
		} `json:"Options"`
		Results []struct {
			Access    string    `json:"access"`
			BwMiB     iorNumber `json:"bwMiB"`
			IOPS      iorNumber `json:"iops"`
			Latency   iorNumber `json:"latency"`
			OpenTime  iorNumber `json:"openTime"`
			WrRdTime  iorNumber `json:"wrRdTime"`
			CloseTime iorNumber `json:"closeTime"`
			TotalTime iorNumber `json:"totalTime"`
		} `json:"Results"`
	} `json:"tests"`
	Summary []struct {
		Operation   string    `json:"operation"`
		TestID      int       `json:"TestID"`
		Repetitions int       `json:"repetitions"`
		BwMaxMIB    iorNumber `json:"bwMaxMIB"`
		BwMinMIB    iorNumber `json:"bwMinMIB"`
		BwMeanMIB   iorNumber `json:"bwMeanMIB"`
		BwStdMIB    iorNumber `json:"bwStdMIB"`
		OPsMax      iorNumber `json:"OPsMax"`
		OPsMin      iorNumber `json:"OPsMin"`
		OPsMean     iorNumber `json:"OPsMean"`
		OPsSD       iorNumber `json:"OPsSD"`
		MeanTime    iorNumber `json:"MeanTime"`
		XsizeMiB    iorNumber `json:"xsizeMiB"`
	} `json:"summary"`
}

// iorNumber is a floating-point value of IOR's JSON: a number, or a string
// for one that is not finite ("inf", and "nan" once ParseIOR has quoted it).
type iorNumber float64

func (n *iorNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if strings.HasPrefix(s, `"`) {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return fmt.Errorf("IOR number %s: %w", b, err)
		}
		// C prints "-nan", which strconv does not take; a NaN's sign
		// means nothing.
		if s == "-nan" {
			s = "nan"
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("IOR number %s: %w", b, err)
	}
	*n = iorNumber(f)
	return nil
}
