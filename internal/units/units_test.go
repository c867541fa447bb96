package units

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"4096", 4096, false}, {"1K", 1024, false}, {"512M", 512 << 20, false}, {"64G", 64 << 30, false},
		{"1.5T", 3 << 39, false}, {"2GiB", 2 << 30, false}, {"10 gb", 10 << 30, false},
		{"", 0, true}, {"-1G", 0, true}, {"12X", 0, true}, {"G", 0, true},
	} {
		got, err := ParseSize(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0K", 3 << 29: "1.5G", 200 << 30: "200G"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{{"300", 300 * time.Second, false}, {"5m", 5 * time.Minute, false}, {"0", 0, false}, {"-5s", 0, true}, {"soon", 0, true},
		{"90d", 90 * 24 * time.Hour, false}, {"1.5d", 0, true}, {"d", 0, true}, {"-1d", 0, true}} {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v", c.in, got, err)
		}
	}
}
