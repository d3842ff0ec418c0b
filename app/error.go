package app

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Every error that reaches a user carries one of these; the web
// layer maps each to an HTTP status in one place.
const (
	EINVALID      = "invalid"
	EMALFORMED    = "malformed"
	ENOTFOUND     = "not_found"
	ECONFLICT     = "conflict"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	ETOOLARGE     = "too_large"
	// ETOOMANY refuses a request made too often (sign-in attempts).
	ETOOMANY = "too_many_requests"
	// EUNAVAILABLE: a dependency (the database) cannot be reached right
	// now; the same request later will most likely work.
	EUNAVAILABLE = "unavailable"
	EINTERNAL    = "internal"
)

// Error is Herald's one error type for failures a caller can act on. Code is
// machine-readable, Message is safe to show to the user, and Field names the
// input that was wrong, when there is one.
type Error struct {
	Code    string
	Message string
	Field   string
	// Reason is a more specific machine-readable code for API callers
	// (unknown_event, invalid_phone, ...); Code still decides the status.
	Reason string
	// Details lists every problem found when a check reports several at
	// once (the first is this error itself); empty otherwise.
	Details []*Error
	// RetryAfter, when set, says how long until the same request may
	// succeed (a rate limit or a daily cap); the API sends it as
	// Retry-After.
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an *Error of code EINVALID that names the offending field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Message: fmt.Sprintf(format, args...), Field: field}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EINTERNAL
	}
}

// ErrorMessage returns the user-facing message of the first *Error in err's
// chain; internal errors get a generic text so details never leak.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	default:
		return "Internal error."
	}
}

// ErrorField returns the field named by the first *Error in err's chain, if any.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// ErrorReason returns the most specific machine-readable code of err: its
// Reason when set, else its Code.
func ErrorReason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return ErrorCode(err)
}

// Invalid returns an EINVALID error with a specific reason and field.
func Invalid(reason, field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Reason: reason, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorDetails returns the problems of the first *Error in err's chain that
// lists several, or nil.
func ErrorDetails(err error) []*Error {
	var e *Error
	if errors.As(err, &e) {
		return e.Details
	}
	return nil
}

// problems collects the validation problems of one input.
type problems []*Error

func (p *problems) add(e *Error) { *p = append(*p, e) }

// err returns nil without problems, else the first problem with all of them
// as its Details.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	first := *p[0]
	first.Details = p
	return &first
}

// ErrorRetryAfter returns how long until a request refused with err may be
// made again, or 0.
func ErrorRetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
