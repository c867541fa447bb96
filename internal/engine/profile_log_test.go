package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseProfile(t *testing.T) {
	ops := []OpStat{
		{Op: "WRITE", Calls: 16384, Mean: 52 * time.Microsecond},
		// 1.001 ms is 1000.9999... µs in float64: read back to the
		// microsecond its line gives, not truncated below it.
		{Op: "CREATE", Calls: 2048, Mean: 1001 * time.Microsecond},
		{Op: "FSYNC", Calls: 1, Mean: 9 * time.Millisecond},
	}
	var body []string
	for _, o := range ops {
		body = append(body, o.LogLine())
	}
	stamp := func(s string) string { return "2026-12-04T15:00:02Z " + s }
	log := append([]string{stamp("stage-out: 2048 files, 2.0 GiB"), stamp(ProfileHead)}, body...)
	log = append(log, stamp("RAMDISK destroyed"), stamp(ProfileHead), OpStat{Op: "WRITE", Calls: 1, Mean: time.Second}.LogLine())

	got, err := ParseProfile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ops) {
		t.Errorf("ParseProfile of the lines LogLine wrote = %+v, want the first profile %+v", got, ops)
	}

	if _, err := ParseProfile([]string{stamp("stage-out: done")}); !errors.Is(err, ErrNoProfile) {
		t.Errorf("a log without a profile: %v, want ErrNoProfile", err)
	}
	unread := []string{stamp(ProfileUnread + " (rsa2: connection refused)")}
	if _, err := ParseProfile(unread); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a profile not read: %v, want the log's reason", err)
	}
}
