package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestAddressRefusal(t *testing.T) {
	t.Parallel()
	failed := func(code string) *app.Message {
		return &app.Message{Status: app.MessageFailed, ErrorCode: &code}
	}
	for code, want := range map[string]string{
		"131026":                   "not on WhatsApp",
		"bounce:Permanent/NoEmail": "bounced permanently (SES bounce:Permanent/NoEmail)",
		"bounce:Permanent/General": "bounced permanently",
		"complaint":                "marked an earlier e-mail as spam",
		"OptedOut":                 "opted out of SMS with the carriers",
		"invalid_recipient":        "refused the address as invalid",
	} {
		require.Contains(t, app.AddressRefusal(failed(code)), want, code)
	}
	// The message, the account or a moment's trouble: the address may
	// work, a retry needs no warning.
	for _, code := range []string{"bounce:Transient/MailboxFull", "131047", "132001", "190", "sms_failure", "sandbox_rejected",
		"MessageRejected", "ThrottlingException", ""} {
		require.Empty(t, app.AddressRefusal(failed(code)), code)
	}
	require.Empty(t, app.AddressRefusal(&app.Message{Status: app.MessageFailed}), "no code")
	sent := failed("131026")
	sent.Status = app.MessageSent
	require.Empty(t, app.AddressRefusal(sent), "only a failed message was refused")
	require.Empty(t, app.AddressRefusal(nil))
}
