package ses

import (
	"regexp"
	"time"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
)

// rules classifies the codes SendEmail returns (PROVIDERS.md, "Amazon SES
// v2"), on top of the codes every AWS API may return. Codes are the SDK v2
// ones: SES v1's ThrottlingException and
// ConfigurationSetDoesNotExistException do not exist in sesv2.
var rules = awsclient.WithCommon(map[string]awsclient.Rule{
	// The recipient or the content was refused; a fallback channel may work.
	"MessageRejected": awsclient.Permanent,
	// The request was refused as invalid: for SendEmail that is the
	// recipient's address ("Illegal address", "Domain contains illegal
	// character"), since Herald checks everything else it sends. One
	// message fails; the account stays, the next passenger's address may
	// be fine.
	"BadRequestException": awsclient.Permanent,

	// The account's setup is wrong, every message would fail the same way.
	"MailFromDomainNotVerifiedException": awsclient.AccountBroken,
	"NotFoundException":                  awsclient.AccountBroken, // unknown configuration set
	// SES stopped the account's sending for good, or paused it (for the
	// account or its configuration set) until someone resumes it: only
	// the tenant or AWS can, and retrying for minutes would not see it.
	"AccountSuspendedException": awsclient.AccountBroken,
	"SendingPausedException":    awsclient.AccountBroken,

	// "Maximum sending rate exceeded" (HTTP 429).
	"TooManyRequestsException": awsclient.Throttled,
	// Quotas rather than rates: wait longer than for a rate.
	"LimitExceededException": {Class: provider.RateLimited, RetryAfter: time.Minute},

	"InternalServiceErrorException": awsclient.Transient,
})

// addressProblem matches the texts SES gives a BadRequestException about
// an e-mail address ("Illegal address", "Missing final '@domain'",
// "Local address contains control or whitespace", "Domain contains
// illegal character").
var addressProblem = regexp.MustCompile(`(?i)address|@domain|\bdomain (contains|starts|ends)|missing domain`)

// classify turns a SendEmail failure into a provider error. static says
// whether the account brings its own keys; known is false for failures
// the table does not know, so that the caller can make them visible.
func classify(err error, static bool) (e *provider.Error, known bool) {
	e, known = awsclient.Classify(err, static, func(code, _ string) (awsclient.Rule, bool) {
		r, ok := rules[code]
		return r, ok
	})
	if e.Code == "BadRequestException" && addressProblem.MatchString(e.Reason) {
		// The same code as an address Herald refuses before sending, so
		// that the timeline and the console name the problem alike; SES's
		// text, which does not repeat the address, stays in the reason.
		e = &provider.Error{Code: "invalid_recipient", Class: provider.Permanent,
			Reason: "SES refused the recipient's address (BadRequestException): " + e.Reason}
	}
	return e, known
}
