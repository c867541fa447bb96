package agent

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
)

// TestEpochFence: once an rsa serve of a newer lease epoch called, the
// older one is refused; requests without an epoch (a daemon of no
// failover pair, a tool) are not judged.
func TestEpochFence(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var f epochFence
	steps := []struct {
		epoch string
		want  error
	}{
		{"", nil},
		{"1", nil},
		{"1", nil},
		{"3", nil},            // the standby took over (twice since)
		{"2", ErrForbidden},   // an older one, cut off, still sending
		{"1", ErrForbidden},   // the first one
		{"", nil},             // a tool with the control certificate
		{"3", nil},            // the active one goes on
		{"0", ErrInvalid},     // no epoch is 0
		{"-4", ErrInvalid},    // nor negative
		{"three", ErrInvalid}, // nor words
		{"4", nil},            // and the next take-over
		{"3", ErrForbidden},   // fences the one before
	}
	for i, s := range steps {
		r := httptest.NewRequest("POST", "/v1/volumes/rsa-job-1", nil)
		if s.epoch != "" {
			r.Header.Set(EpochHeader, s.epoch)
		}
		err := f.admit(log, r)
		if (s.want == nil) != (err == nil) || (s.want != nil && !errors.Is(err, s.want)) {
			t.Errorf("step %d, epoch %q: %v, want %v", i, s.epoch, err, s.want)
		}
	}
}
