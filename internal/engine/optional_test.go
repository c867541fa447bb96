package engine

import (
	"context"
	"io"
	"testing"

	"github.com/rsa-hpc/rsa/internal/stage"
)

// staging is an engine that is a Stager (and an io.Closer); its other
// methods are not called.
type staging struct {
	Engine
	name string
}

func (s *staging) Stage(context.Context, Ramdisk, stage.Task) error { return nil }
func (s *staging) Close() error                                     { return nil }

// wrapper wraps an engine and, with stages set, stages itself: a wrapper
// that adds a behaviour to an optional method.
type wrapper struct {
	staging
	inner Engine
}

func (w *wrapper) Unwrap() Engine { return w.inner }

// opaque wraps an engine without saying so (no Unwrap).
type opaque struct{ Engine }

// As finds an optional interface on the first engine of the chain that
// has it: through wrappers that do not, never inside one that does not
// unwrap.
func TestAs(t *testing.T) {
	inner := &staging{name: "inner"}
	outer := &wrapper{staging: staging{name: "outer"}, inner: inner}
	for _, tc := range []struct {
		name string
		e    Engine
		want string // the staging engine As finds; "": none
	}{
		{"no engine", nil, ""},
		{"an engine without it", &Local{}, ""},
		{"the engine itself", inner, "inner"},
		{"through WithRetry", WithRetry(inner, 3, 0), "inner"},
		{"through WithRetry twice", WithRetry(WithRetry(inner, 3, 0), 2, 0), "inner"},
		{"a wrapper that has it, before what it wraps", outer, "outer"},
		{"that wrapper, through WithRetry", WithRetry(outer, 3, 0), "outer"},
		{"WithRetry of an engine without it", WithRetry(&Local{}, 3, 0), ""},
		{"not inside a wrapper that does not unwrap", opaque{inner}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := As[Stager](tc.e)
			got := ""
			if ok {
				got = s.(stagerName).stagerName()
			}
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("As[Stager] = %q, %v; want %q", got, ok, tc.want)
			}
			c, ok := As[io.Closer](tc.e)
			if ok != (tc.want != "") || ok && c.(stagerName).stagerName() != tc.want {
				t.Errorf("As[io.Closer] found %v (%v); want %q", c, ok, tc.want)
			}
		})
	}
}

// stagerName names the staging engine found, for TestAs.
type stagerName interface{ stagerName() string }

func (s *staging) stagerName() string { return s.name }

// WithRetry adds no optional interface of its own: only As finds the
// engine's through it.
func TestWithRetryIsNoStager(t *testing.T) {
	r := WithRetry(&staging{name: "inner"}, 3, 0)
	if _, ok := r.(Stager); ok {
		t.Error("WithRetry's engine is a Stager itself: it would stage without the engine it wraps")
	}
	if _, ok := r.(Unwrapper); !ok {
		t.Error("WithRetry's engine does not unwrap: As cannot look through it")
	}
}
