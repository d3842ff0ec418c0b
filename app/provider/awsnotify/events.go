package awsnotify

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// SESEvent is the part of an SES event Herald reads.
type SESEvent struct {
	EventType        string `json:"eventType"`
	NotificationType string `json:"notificationType"`
	Mail             struct {
		MessageID string `json:"messageId"`
		Timestamp string `json:"timestamp"`
		// Tags hold the mail's tags, SES's own among them
		// (ses:configuration-set).
		Tags map[string][]string `json:"tags"`
	} `json:"mail"`
	Bounce *struct {
		BounceType        string `json:"bounceType"`
		BounceSubType     string `json:"bounceSubType"`
		Timestamp         string `json:"timestamp"`
		BouncedRecipients []struct {
			EmailAddress   string `json:"emailAddress"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		ComplaintFeedbackType string `json:"complaintFeedbackType"`
		Timestamp             string `json:"timestamp"`
	} `json:"complaint"`
	Delivery *struct {
		Timestamp string `json:"timestamp"`
		SMTP      string `json:"smtpResponse"`
	} `json:"delivery"`
	Reject *struct {
		Reason string `json:"reason"`
	} `json:"reject"`
}

// ConfigurationSetTag is the tag in which SES names the configuration set a
// mail was sent with; events bind to the account with that set.
const ConfigurationSetTag = "ses:configuration-set"

// MessageIDTag is the message tag in which Herald's sends name their
// message (see package ses). SES copies a mail's tags into the events it
// publishes through the mail's configuration set, so an event names the
// message of a send whose answer Herald never read.
const MessageIDTag = "message_id"

// messageRef reads a message_id tag, strictly: one value, a message id in
// its canonical form; anything else names no message.
func messageRef(values []string) uuid.UUID {
	if len(values) != 1 || len(values[0]) != 36 {
		return uuid.Nil
	}
	id, err := uuid.Parse(values[0])
	if err != nil || id.String() != values[0] {
		return uuid.Nil
	}
	return id
}

// SESReceipt turns an SES event (the Message of an SNS notification) into a
// receipt: Delivery is delivered; a Permanent bounce, a complaint and a
// reject are failures; everything else (sends, opens, clicks, delays,
// transient bounces) goes on the timeline only. notificationID is the SNS
// MessageId, which makes replays recognisable.
func SESReceipt(message, notificationID string) (provider.Receipt, error) {
	var ev SESEvent
	if err := json.Unmarshal([]byte(message), &ev); err != nil {
		return provider.Receipt{}, fmt.Errorf("not an SES event: %w", err)
	}
	kind := ev.EventType
	if kind == "" {
		kind = ev.NotificationType
	}
	if kind == "" || ev.Mail.MessageID == "" {
		return provider.Receipt{}, errors.New("not an SES event: eventType and mail.messageId are required")
	}
	r := provider.Receipt{
		Provider: "ses", ExternalID: ev.Mail.MessageID, ReceiptID: notificationID,
		Status: provider.StatusInfo, Code: strings.ToLower(kind), Raw: truncate(message, 500),
	}
	if set := ev.Mail.Tags[ConfigurationSetTag]; len(set) > 0 {
		r.AccountRef = set[0]
	}
	r.MessageRef = messageRef(ev.Mail.Tags[MessageIDTag])
	at := ev.Mail.Timestamp
	switch kind {
	case "Delivery":
		r.Status = provider.StatusDelivered
		if ev.Delivery != nil {
			at, r.Reason = ev.Delivery.Timestamp, ev.Delivery.SMTP
		}
	case "Bounce":
		if ev.Bounce != nil {
			at = ev.Bounce.Timestamp
			r.Code = "bounce:" + ev.Bounce.BounceType + "/" + ev.Bounce.BounceSubType
			if len(ev.Bounce.BouncedRecipients) > 0 {
				r.Reason = ev.Bounce.BouncedRecipients[0].DiagnosticCode
			}
			if ev.Bounce.BounceType == "Permanent" {
				r.Status = provider.StatusFailed
			}
		}
	case "Complaint":
		r.Status, r.Complaint, r.Code = provider.StatusFailed, true, "complaint"
		if ev.Complaint != nil {
			at, r.Reason = ev.Complaint.Timestamp, "The recipient marked the message as spam ("+ev.Complaint.ComplaintFeedbackType+")."
		}
	case "Reject":
		r.Status, r.Code = provider.StatusFailed, "reject"
		if ev.Reject != nil {
			r.Reason = ev.Reject.Reason
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		r.At = t
	}
	return r, nil
}

// SMSStatus is an SNS SMS delivery-status record, as CloudWatch Logs holds it.
type SMSStatus struct {
	Notification struct {
		MessageID string `json:"messageId"`
		Timestamp string `json:"timestamp"`
	} `json:"notification"`
	Delivery struct {
		Destination      string  `json:"destination"`
		ProviderResponse string  `json:"providerResponse"`
		PriceInUSD       float64 `json:"priceInUSD"`
		SMSType          string  `json:"smsType"`
	} `json:"delivery"`
	Status string `json:"status"`
}

// SMSReceipt turns a delivery-status record into a receipt: SUCCESS is
// delivered, FAILURE failed with the carrier's response.
func SMSReceipt(record []byte) (provider.Receipt, error) {
	var s SMSStatus
	if err := json.Unmarshal(record, &s); err != nil {
		return provider.Receipt{}, fmt.Errorf("not an SMS delivery status: %w", err)
	}
	if s.Notification.MessageID == "" {
		return provider.Receipt{}, errors.New("not an SMS delivery status: notification.messageId is required")
	}
	r := provider.Receipt{
		Provider: "sns", ExternalID: s.Notification.MessageID, Reason: s.Delivery.ProviderResponse,
		ReceiptID: s.Notification.MessageID + ":" + s.Status, Raw: truncate(string(record), 500),
	}
	switch s.Status {
	case "SUCCESS":
		r.Status = provider.StatusDelivered
	case "FAILURE":
		r.Status, r.Code = provider.StatusFailed, "sms_failure"
	default:
		return provider.Receipt{}, fmt.Errorf("unknown SMS delivery status %q", s.Status)
	}
	if t, err := time.Parse("2006-01-02 15:04:05.999", s.Notification.Timestamp); err == nil {
		r.At = t.UTC()
	}
	return r, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SMSInbound is an SMS a person sent to a number of the account (two-way
// SMS of AWS End User Messaging, published to an SNS topic). The record has
// no time of its own: the SNS notification's Timestamp is its time.
type SMSInbound struct {
	// From is the sender's number (originationNumber).
	From string `json:"originationNumber"`
	// To is the account's number that received it (destinationNumber).
	To   string `json:"destinationNumber"`
	Body string `json:"messageBody"`
	// ID is AWS's id of the inbound message.
	ID string `json:"inboundMessageId"`
	// Keyword is the keyword AWS matched, if any ("STOP" for its own opt-out list).
	Keyword string `json:"messageKeyword"`
}

// ParseSMSInbound reads a two-way SMS record; ok is false when the message
// is not one (a delivery status, for instance).
func ParseSMSInbound(message string) (SMSInbound, bool, error) {
	var in SMSInbound
	if err := json.Unmarshal([]byte(message), &in); err != nil {
		return SMSInbound{}, false, nil
	}
	if in.ID == "" && in.From == "" {
		return SMSInbound{}, false, nil
	}
	if in.ID == "" || in.From == "" || in.To == "" {
		return SMSInbound{}, true, errors.New("inbound SMS: originationNumber, destinationNumber and inboundMessageId are required")
	}
	return in, true, nil
}
