package mptio

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	valid := Config{Procs: 2, ProcSize: mib, RecordSize: 64 * kib, Threads: 2}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // in the error; "" for none
	}{
		{"valid", func(*Config) {}, ""},
		{"valid devices", func(c *Config) { c.Mode, c.Devices = Device, []string{"/dev/a", "/dev/b"} }, ""},
		{"valid overlaps", func(c *Config) { c.OverlapProcs, c.OverlapThreads = true, true }, ""},
		{"valid per process thread overlap", func(c *Config) { c.Mode, c.OverlapThreads = PerProcess, true }, ""},
		{"no processes", func(c *Config) { c.Procs = 0 }, "-n 0"},
		{"no threads", func(c *Config) { c.Threads = 0 }, "-t 0"},
		{"no record size", func(c *Config) { c.RecordSize = 0 }, "-b: give a record size"},
		{"both sizes", func(c *Config) { c.GlobalSize = mib }, "-f and -F both given"},
		{"no size", func(c *Config) { c.ProcSize = 0 }, "give -f SIZE"},
		{"negative nrand", func(c *Config) { c.NRand = -1 }, "-a -1"},
		{"negative offset", func(c *Config) { c.Offset = -1 }, "-s -1"},
		{"devices without -R", func(c *Config) { c.Devices = []string{"/dev/a"} }, "either devices"},
		{"-R without devices", func(c *Config) { c.Mode = Device }, "name at least one block device"},
		{"device twice", func(c *Config) { c.Mode, c.Devices = Device, []string{"/dev/a", "/dev/a"} }, "given twice"},
		{"threads over devices", func(c *Config) { c.Mode, c.Devices, c.Threads = Device, []string{"/dev/a", "/dev/b"}, 3 }, "use -t 4"},
		{"-T with -O t", func(c *Config) { c.Mode, c.OverlapThreads = PerThread, true }, "-T with -O"},
		{"-T with -O p", func(c *Config) { c.Mode, c.OverlapProcs = PerThread, true }, "-T with -O"},
		{"-P with -O p", func(c *Config) { c.Mode, c.OverlapProcs = PerProcess, true }, "-P with -O p"},
		{"unknown test", func(c *Config) { c.Skip = []Test{5} }, "-k 5"},
		{"all tests skipped", func(c *Config) { c.Skip = Tests() }, "skips all five tests"},
		{"direct, odd record", func(c *Config) { c.Direct, c.RecordSize = true, 1000 }, "use e.g. -b 1024"},
		{"direct, odd offset", func(c *Config) { c.Direct, c.Offset = true, 100 }, "use -s 512"},
		{"check, tiny record", func(c *Config) { c.Check, c.RecordSize = true, 16 }, "at least 32 bytes"},
		{"unknown mode", func(c *Config) { c.Mode = 9 }, "use -G, -P, -T or -R"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("no error, want one with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// TestValidateReportsAll checks that every problem is reported at once.
func TestValidateReportsAll(t *testing.T) {
	err := (&Config{}).Validate()
	if err == nil {
		t.Fatal("an empty config validates")
	}
	for _, want := range []string{"-n 0", "-t 0", "-b:", "no size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
