package sweep

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBlockSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
	}{
		{"4K,64K,1M,16M", []int64{4 << 10, 64 << 10, 1 << 20, 16 << 20}},
		{" 1M , 4k,,1M", []int64{4 << 10, 1 << 20}}, // sorted, once each, spaces and empty items ignored
		{"512,1KiB", []int64{512, 1 << 10}},
		{"1K..32M", Full().BlockSizes},
		{"1K..4K,1M", []int64{1 << 10, 2 << 10, 4 << 10, 1 << 20}},
		{"3K..16K", []int64{3 << 10, 6 << 10, 12 << 10}}, // doubling from FROM, never past TO
	} {
		got, err := ParseBlockSizes(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseBlockSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if n := len(Full().BlockSizes); n != 16 {
		t.Errorf("the full sweep has %d block sizes, want TMS's 16", n)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(string) error
		in    string
		want  string // part of the message: what to write instead
	}{
		{"bs word", bsErr, "4K,big", "write e.g. 512M"},
		{"bs too small", bsErr, "256", "use 512 bytes to 1G"},
		{"bs too big", bsErr, "2G", "use 512 bytes to 1G"},
		{"bs range backwards", bsErr, "32M..1K", "e.g. 1K..32M"},
		{"bs empty", bsErr, " , ", "write e.g. 4K,64K,1M"},
		{"qd zero", qdErr, "0,4", "from 1 to 1024"},
		{"qd word", qdErr, "1,four", "from 1 to 1024"},
		{"qd empty", qdErr, "", "write e.g. 1,4,16"},
		{"device unknown", devErr, "ram", "use ram-dev or disk-dev"},
		{"device path", devErr, "/dev/vda", "makes its own devices"},
		{"device empty", devErr, ",", "write e.g. ram-dev,disk-dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse %q: %v, want an error with %q", tc.in, err, tc.want)
			}
		})
	}
}

func bsErr(s string) error  { _, err := ParseBlockSizes(s); return err }
func qdErr(s string) error  { _, err := ParseQDs(s); return err }
func devErr(s string) error { _, err := ParseDevices(s); return err }

func TestParseQDsAndDevices(t *testing.T) {
	qds, err := ParseQDs("16, 1,4,4")
	if err != nil || !slices.Equal(qds, []int{1, 4, 16}) {
		t.Errorf("ParseQDs = %v, %v; want [1 4 16]", qds, err)
	}
	devs, err := ParseDevices("disk-dev,ram-dev,disk-dev")
	if err != nil || !slices.Equal(devs, []string{RAMDevice, DiskDevice}) {
		t.Errorf("ParseDevices = %v, %v; want ram-dev then disk-dev", devs, err)
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{512: "512", 1 << 10: "1K", 64 << 10: "64K", 1536: "1536", 16 << 20: "16M", 1 << 30: "1G"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{Quick(), Full()} {
		if err := c.Validate(); err != nil {
			t.Errorf("a profile does not validate: %v", err)
		}
	}
	bad := Config{QDs: []int{0}, BlockSizes: []int64{1}, Size: 1, Runtime: -time.Second, Devices: []string{"ram"}}
	err := bad.Validate()
	for _, want := range []string{"queue depth 0", "block size 1", "--size 256M", "--runtime 5s", `device "ram"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to name %q", err, want)
		}
	}
}
