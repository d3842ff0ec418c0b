package meta

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/app/provider"
)

// Default waits for rate-limited sends when Meta gives no Retry-After
// header (it rarely does). They follow what each limit measures.
const (
	// throughputBackoff: the per-number messages-per-second limit clears
	// within a second; the dispatcher's limiter smooths the rest.
	throughputBackoff = 5 * time.Second
	// pairBackoff: Meta allows about one message per 6 s to one recipient.
	pairBackoff = 6 * time.Second
	// callBackoff: app and WABA call limits are counted over longer windows.
	callBackoff = time.Minute
	// upgradeBackoff: a number being upgraded to higher throughput is in
	// maintenance mode for a few minutes.
	upgradeBackoff = 5 * time.Minute
	// spamBackoff: the quality-based spam limit lifts only when the number's
	// quality recovers, so retrying soon only deepens the hole.
	spamBackoff = time.Hour
	// ecosystemBackoff hints how long to wait after Meta chose not to
	// deliver (131049); the hint only matters to a retry policy that reads
	// RetryAfter on transient errors.
	ecosystemBackoff = 15 * time.Minute
	// maxRetryAfter caps the provider's hint so a bogus header cannot park
	// a message for weeks.
	maxRetryAfter = 24 * time.Hour
)

// rule is how one Meta error code is handled.
type rule struct {
	class   provider.Class
	account bool
	// backoff is the wait when Meta sends no Retry-After header.
	backoff time.Duration
	// alert asks for a warning in the log: the failure needs a human even
	// though the message itself will be retried.
	alert bool
}

// ruleFor classifies a Graph error code following the table in
// PROVIDERS.md. Codes outside it return false, and the caller falls back to
// a transient retry that is logged so the code can be added here.
func ruleFor(code int) (rule, bool) {
	switch {
	// The recipient or the request cannot work: not on WhatsApp (go to the
	// fallback channel), outside the 24 h window for free-form text (only
	// a template would work), invalid parameter.
	case code == 131026, code == 131047, code == 100, code == 131051:
		return rule{class: provider.Permanent}, true

	// The template message cannot work as sent: parameter count or format
	// mismatch (132000, 132012, 132018), no such template in this language
	// (132001), text too long once filled (132005), format policy
	// (132007), template paused or disabled (132015, 132016). Retrying the
	// same request changes nothing; the fallback channel takes over.
	case code == 132000, code == 132001, code == 132005, code == 132007,
		code == 132012, code == 132015, code == 132016, code == 132018:
		return rule{class: provider.Permanent}, true

	// The account itself: expired or invalid token, missing permission,
	// restricted or locked account. The tenant must act; the dispatcher
	// suspends the channel account.
	case code == 190, code == 0, code == 10, code >= 200 && code <= 299,
		code == 368, code == 131031, code == 131005:
		return rule{class: provider.Permanent, account: true}, true

	// Meta's side is unwell: unknown, service unavailable, overloaded.
	case code == 131000, code == 131016, code == 133004, code == 1, code == 2:
		return rule{class: provider.Transient}, true

	// Rate limits: throughput, app calls, WABA calls, number upgrading.
	case code == 130429:
		return rule{class: provider.RateLimited, backoff: throughputBackoff}, true
	case code == 4, code == 80007:
		return rule{class: provider.RateLimited, backoff: callBackoff}, true
	case code == 131057:
		return rule{class: provider.RateLimited, backoff: upgradeBackoff}, true
	// The pair limit concerns one recipient only; RateLimited snoozes just
	// this message and, unlike Transient, does not trip the account's
	// circuit breaker for everyone else.
	case code == 131056:
		return rule{class: provider.RateLimited, backoff: pairBackoff}, true
	case code == 131048:
		return rule{class: provider.RateLimited, backoff: spamBackoff, alert: true}, true

	// Meta chose not to deliver to keep engagement healthy; it may later.
	case code == 131049:
		return rule{class: provider.Transient, backoff: ecosystemBackoff}, true
	}
	return rule{}, false
}

// statusError classifies the error of a failed status the way the same
// code is classified at send time. A code outside the table is a permanent
// failure here: unlike a refused call, the message is known to have failed.
func statusError(code int, reason string) *provider.Error {
	pe := &provider.Error{Code: strconv.Itoa(code), Class: provider.Permanent, Reason: reason}
	if r, ok := ruleFor(code); ok {
		pe.Class, pe.Account, pe.RetryAfter = r.class, r.account, r.backoff
	}
	return pe
}

// graphError is the body of a failed Graph API call.
type graphError struct {
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		// Code is a pointer because 0 is a real code (AuthException) and
		// must not be confused with a body that has none.
		Code      *int `json:"code"`
		Subcode   int  `json:"error_subcode"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
		FBTraceID string `json:"fbtrace_id"`
		// UserMessage is what the template endpoints explain a refusal
		// with ("There's already content for this template in ...").
		UserMessage string `json:"error_user_msg"`
	} `json:"error"`
}

// responseError classifies a non-2xx answer. Meta returns the same code
// with different HTTP statuses, so the code decides and the status only
// matters when the body carries none.
func (p *Provider) responseError(resp *http.Response, raw []byte) *provider.Error {
	retryAfter, hinted := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())

	var ge graphError
	if err := json.Unmarshal(raw, &ge); err != nil || ge.Error == nil || ge.Error.Code == nil {
		// No Graph error: a proxy or load balancer answered.
		pe := &provider.Error{Code: "http_" + strconv.Itoa(resp.StatusCode), Class: provider.Transient,
			Reason: "Meta answered " + resp.Status + ": " + excerpt(raw)}
		if resp.StatusCode == http.StatusTooManyRequests {
			pe.Class, pe.RetryAfter = provider.RateLimited, throughputBackoff
			if hinted {
				pe.RetryAfter = retryAfter
			}
		}
		return pe
	}

	e := ge.Error
	code := *e.Code
	details := e.ErrorData.Details
	if details == "" {
		details = e.UserMessage
	}
	pe := &provider.Error{Code: strconv.Itoa(code), Reason: reason(e.Message, details, code)}
	r, known := ruleFor(code)
	if !known {
		// PROVIDERS.md: unknown codes are retried as the safe default, but
		// counted (the dispatcher's metrics count by code) and visible.
		r = rule{class: provider.Transient, alert: true}
		if resp.StatusCode == http.StatusTooManyRequests {
			r = rule{class: provider.RateLimited, backoff: throughputBackoff, alert: true}
		}
	}
	pe.Class, pe.Account, pe.RetryAfter = r.class, r.account, r.backoff
	if hinted && r.class == provider.RateLimited {
		pe.RetryAfter = retryAfter
	}
	if r.alert && p.Log != nil {
		msg := "Meta error needs attention"
		if !known {
			msg = "unclassified Meta error code, retried as transient"
		}
		p.Log.Warn(msg, "code", code, "subcode", e.Subcode, "http_status", resp.StatusCode,
			"class", pe.Class, "message", e.Message, "fbtrace_id", e.FBTraceID)
	}
	return pe
}

// reason joins Meta's message and details, which are often the same text
// and sometimes the only useful one ("Parameter value is not valid").
func reason(message, details string, code int) string {
	message, details = strings.TrimSpace(message), strings.TrimSpace(details)
	switch {
	case message == "" && details == "":
		return "Meta error " + strconv.Itoa(code)
	case message == "":
		return details
	case details == "" || strings.Contains(strings.ToLower(message), strings.ToLower(strings.TrimSuffix(details, "."))):
		return message
	}
	return message + ": " + details
}

// parseRetryAfter reads a Retry-After header in seconds or as an HTTP date.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.Atoi(h); err == nil {
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = at.Sub(now)
	} else {
		return 0, false
	}
	if d <= 0 {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// transportError classifies a failure to get an answer at all. All of
// them are transient: Meta may or may not have the message, and a retry is
// what a tenant expects after a network fault.
func transportError(ctx context.Context, err error) *provider.Error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &provider.Error{Code: "timeout", Class: provider.Transient, Reason: "Meta did not answer in time: " + err.Error()}
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return &provider.Error{Code: "canceled", Class: provider.Transient, Reason: "The send was canceled: " + err.Error()}
	}
	return &provider.Error{Code: "network", Class: provider.Transient, Reason: "Meta could not be reached: " + err.Error()}
}
