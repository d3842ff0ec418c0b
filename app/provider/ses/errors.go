package ses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/heraldhq/herald/app/provider"
)

// rule is how an SES error code is classified.
type rule struct {
	class   provider.Class
	account bool
	// credentials marks rejected credentials: the tenant's to fix when the
	// account brings its own keys, the operator's when it uses the server's
	// default credential chain.
	credentials bool
	retryAfter  time.Duration
}

var (
	permanent     = rule{class: provider.Permanent}
	accountBroken = rule{class: provider.Permanent, account: true}
	badCredential = rule{class: provider.Permanent, account: true, credentials: true}
	transient     = rule{class: provider.Transient}
	throttled     = rule{class: provider.RateLimited, retryAfter: time.Second}
)

// rules classifies the codes SendEmail returns (PROVIDERS.md, "Amazon SES
// v2") and the codes every AWS API may return. Codes are the SDK v2 ones:
// SES v1's ThrottlingException and ConfigurationSetDoesNotExistException
// do not exist in sesv2.
var rules = map[string]rule{
	// The recipient or the content was refused; a fallback channel may work.
	"MessageRejected": permanent,

	// The account's setup is wrong, every message would fail the same way.
	"MailFromDomainNotVerifiedException": accountBroken,
	"NotFoundException":                  accountBroken, // unknown configuration set
	"BadRequestException":                accountBroken,
	"AccountSuspendedException":          accountBroken,

	// An operator paused sending (or SES did, pending review); it resumes
	// without changes on Herald's side.
	"SendingPausedException": transient,

	// "Maximum sending rate exceeded" (HTTP 429).
	"TooManyRequestsException": throttled,
	// Quotas rather than rates: wait longer than for a rate.
	"LimitExceededException": {class: provider.RateLimited, retryAfter: time.Minute},

	"InternalServiceErrorException": transient,

	// Common AWS codes.
	"UnrecognizedClientException":         badCredential,
	"InvalidClientTokenId":                badCredential,
	"InvalidSignatureException":           badCredential,
	"SignatureDoesNotMatch":               badCredential,
	"IncompleteSignature":                 badCredential,
	"MissingAuthenticationToken":          badCredential,
	"MissingAuthenticationTokenException": badCredential,
	"AccessDeniedException":               badCredential,
	"AccessDenied":                        badCredential,
	"ExpiredToken":                        badCredential,
	"ExpiredTokenException":               badCredential,
	"OptInRequired":                       badCredential,
	"Throttling":                          throttled,
	"ThrottlingException":                 throttled,
	"ThrottledException":                  throttled,
	"RequestLimitExceeded":                throttled,
	"TooManyRequests":                     throttled,
	"InternalFailure":                     transient,
	"InternalError":                       transient,
	"ServiceUnavailable":                  transient,
	"ServiceUnavailableException":         transient,
	"RequestTimeout":                      transient,
	"RequestTimeoutException":             transient,
	// The request's signing time is too far from AWS's clock.
	"RequestExpired": transient,
}

// classify turns a SendEmail failure into a provider error. static says
// whether the account brings its own keys. Anything not recognised is
// transient, an unknown failure is retried rather than dropped, and known
// is false so that the caller can make it visible.
func classify(err error, static bool) (e *provider.Error, known bool) {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe, true
	}
	status, header := response(err)

	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, msg := apiErr.ErrorCode(), reason(apiErr.ErrorMessage())
		r, known := rules[code]
		switch {
		case known && r.credentials && !static:
			// The server's own credentials were refused: suspending the
			// tenant's account would not help, the operator must act.
			return &provider.Error{Code: code, Class: provider.Transient, Reason: "server AWS credentials: " + msg}, true
		case known:
			e := &provider.Error{Code: code, Class: r.class, Reason: msg, Account: r.account}
			if r.class == provider.RateLimited {
				e.RetryAfter = retryAfter(header, r.retryAfter)
			}
			return e, true
		case code == "" || code == "UnknownError":
			// A body without a code (a proxy's error page, an empty 5xx):
			// name the failure after its status.
			code = fmt.Sprintf("http_%d", status)
		}
		if status == http.StatusTooManyRequests {
			return &provider.Error{Code: code, Class: provider.RateLimited, Reason: msg, RetryAfter: retryAfter(header, time.Second)}, true
		}
		return &provider.Error{Code: code, Class: provider.Transient, Reason: msg}, status >= 500
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
	case status == http.StatusTooManyRequests:
		return &provider.Error{Code: "http_429", Class: provider.RateLimited, Reason: msg, RetryAfter: retryAfter(header, time.Second)}, true
	case status != 0:
		// An answer the SDK could not read, such as an HTML 502 page.
		return &provider.Error{Code: fmt.Sprintf("http_%d", status), Class: provider.Transient, Reason: msg}, status >= 500
	}
	return &provider.Error{Code: "unknown", Class: provider.Transient, Reason: msg}, false
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

// retryAfter reads a Retry-After header given in seconds, or returns def.
// AWS rarely sends one, but a proxy in front of the endpoint may.
func retryAfter(header http.Header, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(header.Get("Retry-After"))); err == nil && s > 0 && s <= 3600 {
		return time.Duration(s) * time.Second
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
