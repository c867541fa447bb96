// Package refuse names why rsa serve turns a request down, in the domain's
// words: the request is invalid, the caller may not, the thing asked for
// does not exist, does not apply now, would pass a limit, or the service
// cannot take it now. The daemon returns these; only the API's edge
// (internal/api) turns them into HTTP statuses.
package refuse

import (
	"errors"
	"fmt"
)

// The kinds of refusal. Match them with errors.Is.
var (
	ErrInvalid       = errors.New("invalid request")     // the request itself is wrong: fix it
	ErrForbidden     = errors.New("forbidden")           // not this caller's to ask
	ErrNotFound      = errors.New("not found")           // no such job, node or RAMDISK
	ErrNotApplicable = errors.New("does not apply now")  // the state it is in does not take it
	ErrLimit         = errors.New("limit reached")       // a site limit: wait, or free something
	ErrUnavailable   = errors.New("service unavailable") // not now: try again later
)

// Error is a refusal of one kind, with the message its caller reads.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, kind) match the refusal's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

func newf(kind error, format string, args []any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Invalid, Forbidden, NotFound, NotApplicable, Limit and Unavailable are
// refusals of each kind; the message names the problem and the fix.
func Invalid(format string, args ...any) error { return newf(ErrInvalid, format, args) }

func Forbidden(format string, args ...any) error { return newf(ErrForbidden, format, args) }

func NotFound(format string, args ...any) error { return newf(ErrNotFound, format, args) }

func NotApplicable(format string, args ...any) error { return newf(ErrNotApplicable, format, args) }

func Limit(format string, args ...any) error { return newf(ErrLimit, format, args) }

func Unavailable(format string, args ...any) error { return newf(ErrUnavailable, format, args) }
