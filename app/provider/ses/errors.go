package ses

import (
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

	// The account's setup is wrong, every message would fail the same way.
	"MailFromDomainNotVerifiedException": awsclient.AccountBroken,
	"NotFoundException":                  awsclient.AccountBroken, // unknown configuration set
	"BadRequestException":                awsclient.AccountBroken,
	"AccountSuspendedException":          awsclient.AccountBroken,

	// An operator paused sending (or SES did, pending review); it resumes
	// without changes on Herald's side.
	"SendingPausedException": awsclient.Transient,

	// "Maximum sending rate exceeded" (HTTP 429).
	"TooManyRequestsException": awsclient.Throttled,
	// Quotas rather than rates: wait longer than for a rate.
	"LimitExceededException": {Class: provider.RateLimited, RetryAfter: time.Minute},

	"InternalServiceErrorException": awsclient.Transient,
})

// classify turns a SendEmail failure into a provider error. static says
// whether the account brings its own keys; known is false for failures
// the table does not know, so that the caller can make them visible.
func classify(err error, static bool) (e *provider.Error, known bool) {
	return awsclient.Classify(err, static, func(code, _ string) (awsclient.Rule, bool) {
		r, ok := rules[code]
		return r, ok
	})
}
