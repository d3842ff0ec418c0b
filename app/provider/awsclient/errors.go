package awsclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/heraldhq/herald/app/provider"
)

// Rule is how an AWS error code is classified.
type Rule struct {
	Class provider.Class
	// Account marks codes that mean the channel account is broken.
	Account bool
	// Credentials marks rejected credentials: the tenant's to fix when the
	// account brings its own keys, the operator's when it uses the server's
	// default credential chain.
	Credentials bool
	// RetryAfter is the wait of a RateLimited code when the answer has no
	// Retry-After header.
	RetryAfter time.Duration
}

// The rules most codes share.
var (
	Permanent     = Rule{Class: provider.Permanent}
	AccountBroken = Rule{Class: provider.Permanent, Account: true}
	BadCredential = Rule{Class: provider.Permanent, Account: true, Credentials: true}
	Transient     = Rule{Class: provider.Transient}
	Throttled     = Rule{Class: provider.RateLimited, RetryAfter: time.Second}
)

// common classifies the codes every AWS API may return.
var common = map[string]Rule{
	"UnrecognizedClientException":         BadCredential,
	"InvalidClientTokenId":                BadCredential,
	"InvalidSignatureException":           BadCredential,
	"SignatureDoesNotMatch":               BadCredential,
	"IncompleteSignature":                 BadCredential,
	"MissingAuthenticationToken":          BadCredential,
	"MissingAuthenticationTokenException": BadCredential,
	"AccessDeniedException":               BadCredential,
	"AccessDenied":                        BadCredential,
	"NotAuthorized":                       BadCredential,
	"ExpiredToken":                        BadCredential,
	"ExpiredTokenException":               BadCredential,
	"OptInRequired":                       BadCredential,
	"Throttling":                          Throttled,
	"ThrottlingException":                 Throttled,
	"ThrottledException":                  Throttled,
	"RequestLimitExceeded":                Throttled,
	"TooManyRequests":                     Throttled,
	"InternalFailure":                     Transient,
	"InternalError":                       Transient,
	"ServiceUnavailable":                  Transient,
	"ServiceUnavailableException":         Transient,
	"RequestTimeout":                      Transient,
	"RequestTimeoutException":             Transient,
	// The request's signing time is too far from AWS's clock.
	"RequestExpired": Transient,
}

// WithCommon returns a service's table extended with the codes every AWS
// API may return, so that an adapter lists only its service's own codes.
// The service's rule wins where both name a code.
func WithCommon(service map[string]Rule) map[string]Rule {
	rules := maps.Clone(common)
	maps.Copy(rules, service)
	return rules
}

// Classify turns a failed call into a provider error. static says whether
// the account brings its own keys; rule looks up the service's rule for an
// error code and message.
//
// An answer without an AWS error code (a proxy's or an emulator's plain
// 400, an HTML 502, a query-protocol error document the SDK cannot read)
// is classified by the code found in its body when there is one, else by
// its status: 429 waits, 408 and 5xx are retried, any other 4xx fails
// the message (not the account: a proxy's 403 proves nothing about the
// keys). Anything not recognised is transient, an unknown failure is
// retried rather than dropped, and known is false so that the caller can
// make it visible.
func Classify(err error, static bool, rule func(code, msg string) (Rule, bool)) (e *provider.Error, known bool) {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe, true
	}
	status, header := response(err)
	body := errorBodyOf(err)

	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, msg := apiErr.ErrorCode(), apiErr.ErrorMessage()
		if code == "" || code == "UnknownError" {
			// The SDK found no code where its protocol puts one; the body
			// may still name it in another shape.
			code, msg = codeInBody(body)
			if code == "" {
				// Emulators (moto) name the code in this header for every
				// protocol, while the query protocol's parser reads only
				// the body.
				code = sanitizeCode(header.Get("X-Amzn-ErrorType"))
			}
			if code == "UnknownError" {
				code = ""
			}
			if msg == "" {
				msg = apiErr.ErrorMessage()
			}
		}
		if code != "" {
			return byCode(code, reason(msg), status, header, static, rule)
		}
	}
	if status != 0 {
		return byStatus(status, header, err, body)
	}

	msg := reason(err.Error())
	var sendErr *smithyhttp.RequestSendError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &provider.Error{Code: "timeout", Class: provider.Transient, Reason: msg}, true
	case errors.Is(err, context.Canceled):
		return &provider.Error{Code: "canceled", Class: provider.Transient, Reason: msg}, true
	case errors.As(err, &sendErr):
		return &provider.Error{Code: "connection_error", Class: provider.Transient, Reason: msg}, true
	}
	return &provider.Error{Code: "unknown", Class: provider.Transient, Reason: msg}, false
}

// byCode classifies an answer that named an AWS error code.
func byCode(code, msg string, status int, header http.Header, static bool, rule func(code, msg string) (Rule, bool)) (*provider.Error, bool) {
	r, known := rule(code, msg)
	switch {
	case known && r.Credentials && !static:
		// The server's own credentials were refused: suspending the
		// tenant's account would not help, the operator must act.
		return &provider.Error{Code: code, Class: provider.Transient, Reason: "server AWS credentials: " + msg, ServerCredentials: true}, true
	case known:
		e := &provider.Error{Code: code, Class: r.Class, Reason: msg, Account: r.Account}
		if r.Class == provider.RateLimited {
			e.RetryAfter = retryAfter(header, r.RetryAfter)
		}
		return e, true
	case status == http.StatusTooManyRequests:
		return &provider.Error{Code: code, Class: provider.RateLimited, Reason: msg, RetryAfter: retryAfter(header, time.Second)}, true
	}
	// A code the tables do not know yet: retried, and logged by the
	// caller so that it gets classified.
	return &provider.Error{Code: code, Class: provider.Transient, Reason: msg}, false
}

// byStatus classifies an answer without an error code by its HTTP status.
func byStatus(status int, header http.Header, err error, body []byte) (*provider.Error, bool) {
	code := fmt.Sprintf("http_%d", status)
	msg := fmt.Sprintf("HTTP %d without an AWS error code", status)
	if ex := bodyExcerpt(body); ex != "" {
		msg += ": " + ex
	} else if body == nil {
		msg += ": " + err.Error()
	}
	msg = reason(msg)
	switch {
	case status == http.StatusTooManyRequests:
		return &provider.Error{Code: code, Class: provider.RateLimited, Reason: msg, RetryAfter: retryAfter(header, time.Second)}, true
	case status >= 500 || status == http.StatusRequestTimeout:
		return &provider.Error{Code: code, Class: provider.Transient, Reason: msg}, true
	case status >= 400:
		// Something between Herald and AWS, or an emulator, refused this
		// request; sending it again would be refused the same way.
		// Logged all the same: it is not an answer AWS itself gives.
		return &provider.Error{Code: code, Class: provider.Permanent, Reason: msg}, false
	}
	// A redirect or an informational status: nothing AWS sends.
	return &provider.Error{Code: code, Class: provider.Transient, Reason: msg}, false
}

// response returns the HTTP status and headers of the answer err came
// with, if there was one.
func response(err error) (int, http.Header) {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		return re.Response.StatusCode, re.Response.Header
	}
	return 0, nil
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date,
// or returns def. AWS rarely sends one, but a proxy in front of the
// endpoint may.
func retryAfter(header http.Header, def time.Duration) time.Duration {
	return retryAfterAt(header, def, time.Now())
}

// retryAfterAt is retryAfter at time now (a date counts from it). Hints
// past an hour are taken as an hour: a bogus header must not park sends.
func retryAfterAt(header http.Header, def time.Duration, now time.Time) time.Duration {
	v := strings.TrimSpace(header.Get("Retry-After"))
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, time.Hour)
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return min(at.Sub(now), time.Hour)
	}
	return def
}

// reason shortens a provider message for the message timeline.
func reason(s string) string {
	const limit = 300
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
