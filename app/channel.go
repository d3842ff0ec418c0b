package app

import "strings"

// Channel is a way of reaching a person.
type Channel string

// Channels Herald sends on.
const (
	WhatsApp Channel = "WHATSAPP"
	Email    Channel = "EMAIL"
	SMS      Channel = "SMS"
	Webhook  Channel = "WEBHOOK"
)

// Channels lists every channel in a stable order.
var Channels = []Channel{WhatsApp, Email, SMS, Webhook}

// ParseChannel accepts a channel name in any case.
func ParseChannel(s string) (Channel, bool) {
	c := Channel(strings.ToUpper(strings.TrimSpace(s)))
	for _, known := range Channels {
		if c == known {
			return c, true
		}
	}
	return "", false
}

// Queue returns the River queue a channel dispatches on.
func (c Channel) Queue() string {
	switch c {
	case WhatsApp:
		return QueueDispatchWhatsApp
	case Email:
		return QueueDispatchEmail
	case SMS:
		return QueueDispatchSMS
	default:
		return QueueDispatchWebhook
	}
}

// Phone reports whether the channel addresses a phone number.
func (c Channel) Phone() bool { return c == WhatsApp || c == SMS }
