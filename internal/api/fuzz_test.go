package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// FuzzSubmitRequest and FuzzHookRequest send a fuzzed body, after pad
// bytes of white space, through the real handler of POST /v1/jobs and
// POST /v1/hooks, as a peer whose credentials the listener has read. The
// decoding must not panic, must read no more than its limit whatever the
// body's length, must refuse a key it does not know (at any depth), and
// must answer 400 to what it refuses. The seeds are in
// testdata/fuzz/FuzzSubmitRequest and testdata/fuzz/FuzzHookRequest.
func FuzzSubmitRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, pad uint32) {
		serveFuzzed[SubmitRequest](t, "/v1/jobs", 1<<20, body, pad)
	})
}

func FuzzHookRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, pad uint32) {
		got := serveFuzzed[HookRequest](t, "/v1/hooks", 4<<20, body, pad)
		if got != nil && got.Wait > maxWait {
			t.Fatalf("the hook may wait %v, more than %v", got.Wait, maxWait)
		}
	})
}

// decodeStub records the request a handler decoded.
type decodeStub struct {
	Service
	submit *SubmitRequest
	hook   *HookRequest
}

func (s *decodeStub) Submit(_ context.Context, _ Peer, r SubmitRequest) (*JobView, error) {
	s.submit = &r
	return &JobView{}, nil
}

func (s *decodeStub) Hook(_ context.Context, _ Peer, r HookRequest) (*HookReply, error) {
	s.hook = &r
	return &HookReply{Verdict: Success}, nil
}

// serveFuzzed posts pad spaces and body to path and returns the request
// the service got, or nil if the handler refused it.
func serveFuzzed[R SubmitRequest | HookRequest](t *testing.T, path string, limit int64, body []byte, pad uint32) *R {
	t.Helper()
	n := int64(pad) % (2 * limit) // past the limit half the time
	r := &countingReader{r: io.MultiReader(&spaceReader{n: n}, bytes.NewReader(body))}
	req := httptest.NewRequest(http.MethodPost, path, r)
	req = req.WithContext(context.WithValue(req.Context(), peerKey{}, Peer{PID: 1, UID: 1000, GID: 1000}))
	stub := &decodeStub{}
	w := httptest.NewRecorder()
	NewServer(stub, slog.New(slog.DiscardHandler)).Handler.ServeHTTP(w, req)

	// http.MaxBytesReader reads one byte past the limit to know it is
	// past it, and no more.
	if r.n > limit+1 {
		t.Fatalf("read %d bytes of the body; the limit is %d", r.n, limit)
	}
	var got *R
	switch v := any(&got).(type) {
	case **SubmitRequest:
		*v = stub.submit
	case **HookRequest:
		*v = stub.hook
	}
	if got == nil {
		var e map[string]string
		if w.Code != http.StatusBadRequest || json.Unmarshal(w.Body.Bytes(), &e) != nil || e["error"] == "" {
			t.Fatalf("refused with %d %q, want 400 and a JSON error", w.Code, w.Body)
		}
		return nil
	}
	if w.Code != http.StatusOK {
		t.Fatalf("the service answered, but the status is %d", w.Code)
	}
	if n >= limit {
		t.Fatalf("accepted a body of %d bytes, past the limit of %d", n+int64(len(body)), limit)
	}
	// The request's first JSON value is what was decoded: no key of it
	// may be one that the request type does not have.
	var doc any
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&doc); err != nil {
		t.Fatalf("accepted %q, which is not JSON: %v", body, err)
	}
	if key, ok := unknownKey(doc, reflect.TypeFor[R]()); ok {
		t.Fatalf("accepted the unknown key %q in %q", key, body)
	}
	return got
}

// unknownKey finds a key of v, a decoded JSON value, that no field of typ
// takes. Keys match field names as encoding/json matches them: exactly or
// case-folded. (The request types embed no struct, whose fields it would
// miss.)
func unknownKey(v any, typ reflect.Type) (string, bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch v := v.(type) {
	case map[string]any:
		if typ.Kind() != reflect.Struct {
			return "", false // a map's keys are its own
		}
	fields:
		for key, val := range v {
			for i := range typ.NumField() {
				f := typ.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if !f.IsExported() || f.Anonymous || name == "-" {
					continue
				}
				if name == "" {
					name = f.Name
				}
				if strings.EqualFold(name, key) {
					if k, bad := unknownKey(val, f.Type); bad {
						return key + "." + k, true
					}
					continue fields
				}
			}
			return key, true
		}
	case []any:
		if typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array {
			for _, e := range v {
				if k, bad := unknownKey(e, typ.Elem()); bad {
					return k, true
				}
			}
		}
	}
	return "", false
}

// spaceReader reads n spaces, without holding them.
type spaceReader struct{ n int64 }

func (s *spaceReader) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), s.n)
	for i := range k {
		p[i] = ' '
	}
	s.n -= k
	return int(k), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// TestUnknownKey checks the fuzz tests' checker, which would otherwise
// pass by finding nothing.
func TestUnknownKey(t *testing.T) {
	cases := []struct {
		doc  string
		typ  reflect.Type
		want string // "" for none
	}{
		{`{"spec":{"input":"/a"},"attach":true}`, reflect.TypeFor[SubmitRequest](), ""},
		{`{"SPEC":{"Compute_Nodes":1},"ATTACH":true}`, reflect.TypeFor[SubmitRequest](), ""},
		{`{"ſpec":{}}`, reflect.TypeFor[SubmitRequest](), ""},
		{`{"spec":null}`, reflect.TypeFor[SubmitRequest](), ""},
		{`{"spec":{},"owner":1}`, reflect.TypeFor[SubmitRequest](), "owner"},
		{`{"spec":{"uid":0}}`, reflect.TypeFor[SubmitRequest](), "spec.uid"},
		{`{"hook":"x","args":["a"],"wait":1}`, reflect.TypeFor[HookRequest](), ""},
		{`{"hook":"x","Script2":""}`, reflect.TypeFor[HookRequest](), "Script2"},
		{`[{"x":1}]`, reflect.TypeFor[[]HookRequest](), "x"},
	}
	for _, c := range cases {
		var doc any
		if err := json.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		if got, _ := unknownKey(doc, c.typ); got != c.want {
			t.Errorf("unknownKey(%s, %v) = %q, want %q", c.doc, c.typ, got, c.want)
		}
	}
}
