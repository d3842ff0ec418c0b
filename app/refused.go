package app

import "strings"

// AddressRefusal says, for a FAILED message, whether the provider refused
// the address itself rather than this one message, the account or a
// moment's trouble, and how, in words: a number Meta cannot reach on
// WhatsApp, an e-mail address that bounced permanently or complained, an
// address or number the provider called invalid, a number opted out of
// SMS with the carriers. Sending to that address again fails the same way
// (and a repeated hard bounce or complaint costs the sender's
// reputation), so the console asks before a person does. "" otherwise.
//
// The codes are the providers' own, as error_code keeps them: Meta's
// Graph error codes, SES's bounce type and subtype from its event
// notifications, SES's and SNS's API error codes, and invalid_recipient,
// which Herald's adapters give an address they refuse before sending.
func AddressRefusal(m *Message) string {
	if m == nil || m.Status != MessageFailed || m.ErrorCode == nil {
		return ""
	}
	code := *m.ErrorCode
	switch {
	case code == "131026":
		return "Meta could not deliver to this number on WhatsApp (131026): it is not on WhatsApp or cannot receive this message."
	case strings.HasPrefix(strings.ToLower(code), "bounce:permanent"):
		return "The e-mail address bounced permanently (SES " + code + ")."
	case code == "complaint":
		return "The recipient marked an earlier e-mail as spam."
	case code == "OptedOut":
		return "The number opted out of SMS with the carriers (SNS OptedOut)."
	case code == "invalid_recipient":
		return "The provider refused the address as invalid."
	}
	return ""
}
