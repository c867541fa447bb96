package refuse

import (
	"errors"
	"fmt"
	"testing"
)

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind error
	}{
		{Invalid("bad %s", "x"), ErrInvalid},
		{Forbidden("no"), ErrForbidden},
		{NotFound("none"), ErrNotFound},
		{NotApplicable("not now"), ErrNotApplicable},
		{Limit("too many"), ErrLimit},
		{Unavailable("later"), ErrUnavailable},
	} {
		wrapped := fmt.Errorf("context: %w", tc.err)
		if !errors.Is(wrapped, tc.kind) {
			t.Errorf("%v is not %v", wrapped, tc.kind)
		}
		if errors.Is(tc.err, ErrInvalid) != (tc.kind == ErrInvalid) {
			t.Errorf("%v matches a kind it is not", tc.err)
		}
	}
	if got := Invalid("bad %s", "x").Error(); got != "bad x" {
		t.Errorf("message %q", got)
	}
}
