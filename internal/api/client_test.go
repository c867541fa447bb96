package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestUnreachable(t *testing.T) {
	// As net/http returns them: a *url.Error around a *net.OpError around
	// the system call's error.
	netErr := func(op string, errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "http://rsa/v1/jobs/1", Err: &net.OpError{Op: op, Net: "unix", Err: os.NewSyscallError(op, errno)}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no socket", netErr("dial", syscall.ENOENT), true},
		{"nobody listening", netErr("dial", syscall.ECONNREFUSED), true},
		{"killed while answering", netErr("read", syscall.ECONNRESET), true},
		{"killed while the request was written", netErr("write", syscall.EPIPE), true},
		{"closed before the answer", &url.Error{Op: "Get", URL: "http://rsa/", Err: io.EOF}, true},
		{"closed in the body", fmt.Errorf("decoding: %w", io.ErrUnexpectedEOF), true},
		{"shutting down", &Error{Status: 503, Msg: "rsa daemon is shutting down; try again"}, true},
		{"refused", &Error{Status: 403, Msg: "not your job"}, false},
		{"too many jobs", &Error{Status: 429, Msg: "already has 4 active RSA jobs"}, false},
		{"timed out", context.DeadlineExceeded, false},
		{"no permission on the socket", netErr("dial", syscall.EACCES), false},
		{"other", errors.New("bad JSON"), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
