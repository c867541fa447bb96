package thesis

import (
	"os"
	"path/filepath"
	"testing"
)

// The reports are fio 3.33's own (testdata/README.md).
func TestParseFio(t *testing.T) {
	for _, tc := range []struct {
		file               string
		readBytes, wrBytes int64
		readMiBps, wrMiBps float64
	}{
		{"fio-t51-write.json", 0, 4 << 20, 0, 4000},
		{"fio-t53-group.json", 0, 4 << 20, 0, 4000}, // four jobs, group_reporting: one entry
		{"fio-t54-read.json", 4 << 20, 0, 4000, 0},  // two jobs, summed
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		// A note before the report, as fio prints some.
		b = append([]byte("fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n"), b...)
		r, w, err := parseFio(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r.Bytes != tc.readBytes || w.Bytes != tc.wrBytes || r.MiBps != tc.readMiBps || w.MiBps != tc.wrMiBps {
			t.Errorf("%s: read %+v write %+v, want %d B %v MiB/s, %d B %v MiB/s", tc.file, r, w, tc.readBytes, tc.readMiBps, tc.wrBytes, tc.wrMiBps)
		}
	}
}

func TestParseFioRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"nothing":   "fio: pid=1, err=2/file:filesetup.c:1 error=No such file or directory\n",
		"no jobs":   `{"fio version": "fio-3.33", "jobs": []}`,
		"job error": `{"jobs": [{"jobname": "t51", "error": 5, "read": {}, "write": {}}]}`,
		"truncated": `{"jobs": [{"jobname": `,
	} {
		if _, _, err := parseFio([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
