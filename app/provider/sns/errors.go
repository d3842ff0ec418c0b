package sns

import (
	"regexp"
	"strings"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
)

// rules classifies the codes Publish returns (PROVIDERS.md, "Amazon SNS
// SMS"), on top of the codes every AWS API may return. The keys are wire
// codes, which differ from the SDK's type names:
// InvalidParameterValueException is "ParameterValueInvalid",
// AuthorizationErrorException "AuthorizationError".
var rules = awsclient.WithCommon(map[string]awsclient.Rule{
	// The number (or the message) is unusable; a fallback channel may work.
	"InvalidParameter":      awsclient.Permanent,
	"ParameterValueInvalid": awsclient.Permanent,
	"ValidationException":   awsclient.Permanent,
	// Publishing to an opted-out number normally succeeds and fails only
	// in the delivery status, but the API has the code.
	"OptedOut": awsclient.Permanent,
	// Push endpoints and topics, not SMS; permanent should they appear.
	"EndpointDisabled":            awsclient.Permanent,
	"PlatformApplicationDisabled": awsclient.Permanent,
	"NotFound":                    awsclient.Permanent,

	// The principal may not publish.
	"AuthorizationError": awsclient.BadCredential,
	"InvalidSecurity":    awsclient.BadCredential,

	// KMS problems of encrypted topics are transient (seed 000 §4.7).
	"KMSThrottling":    awsclient.Throttled,
	"KMSDisabled":      awsclient.Transient,
	"KMSAccessDenied":  awsclient.Transient,
	"KMSInvalidState":  awsclient.Transient,
	"KMSNotFound":      awsclient.Transient,
	"KMSOptInRequired": awsclient.Transient,

	// Publish's own rate limit (SMS messages per second).
	"Throttled": awsclient.Throttled,
})

// userError classifies the seed's "UserError" (seed 000 §4.6): the monthly
// SMS spending limit recovers when the month turns or an operator raises
// the limit, anything else is permanent.
func userError(msg string) awsclient.Rule {
	if strings.Contains(strings.ToLower(msg), "spending limit") {
		return awsclient.Transient
	}
	return awsclient.Permanent
}

// classify turns a Publish failure into a provider error. static says
// whether the account brings its own keys; known is false for failures
// the table does not know, so that the caller can make them visible.
func classify(err error, static bool) (e *provider.Error, known bool) {
	e, known = awsclient.Classify(err, static, func(code, msg string) (awsclient.Rule, bool) {
		if code == "UserError" {
			return userError(msg), true
		}
		r, ok := rules[code]
		return r, ok
	})
	if (e.Code == "InvalidParameter" || e.Code == "ParameterValueInvalid") && phoneNumberProblem.MatchString(e.Reason) {
		// The same code as a number Herald refuses before sending, so that
		// the timeline and the console name the problem alike.
		e = &provider.Error{Code: "invalid_recipient", Class: provider.Permanent,
			Reason: "SNS refused the phone number (" + e.Code + "): " + e.Reason}
	}
	return e, known
}

// phoneNumberProblem matches SNS's texts about the destination number
// ("Invalid parameter: PhoneNumber Reason: ... is not valid to publish to").
var phoneNumberProblem = regexp.MustCompile(`(?i)\bphone ?number\b`)
