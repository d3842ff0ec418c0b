package web

import (
	"crypto/subtle"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
)

// Provider webhooks answer fast and plainly: a verified message that Herald
// cannot place is still a 200 (SNS would only retry it), a message that
// fails verification is a 401/403 and changes nothing.

// snsEnvelope reads and verifies an SNS message for an allowed topic, and
// confirms subscriptions. It returns nil, nil when the request is fully
// answered (a confirmation).
func (s *Server) snsEnvelope(c *fiber.Ctx) (*awsnotify.Envelope, error) {
	e, err := awsnotify.ParseEnvelope(c.Body())
	if err != nil {
		return nil, &app.Error{Code: app.EMALFORMED, Message: err.Error()}
	}
	if !slices.Contains(s.Config.SNSTopicARNs, e.TopicArn) {
		s.Log.Warn("SNS message for a topic that is not allowed", "topic", e.TopicArn, "type", e.Type)
		return nil, app.Errorf(app.EFORBIDDEN, "Topic %s is not allowed (HERALD_SNS_TOPIC_ARNS).", e.TopicArn)
	}
	if err := s.SNSVerifier.Verify(c.UserContext(), e); err != nil {
		s.Log.Warn("SNS signature rejected", "topic", e.TopicArn, "err", err)
		return nil, app.Errorf(app.EFORBIDDEN, "Signature rejected: %s.", err.Error())
	}
	switch e.Type {
	case awsnotify.TypeSubscriptionConfirmation:
		if err := s.SNSVerifier.Confirm(c.UserContext(), e); err != nil {
			return nil, err
		}
		s.Log.Info("SNS subscription confirmed", "topic", e.TopicArn)
		return nil, nil
	case awsnotify.TypeUnsubscribeConfirmation:
		s.Log.Warn("SNS subscription ended", "topic", e.TopicArn)
		return nil, nil
	}
	return e, nil
}

// acceptReceipt stores a verified receipt in the inbox and answers.
func (s *Server) acceptReceipt(c *fiber.Ctx, via app.Via, r provider.Receipt) error {
	if err := s.Receipts.Accept(c.UserContext(), app.InboxReceipt{Via: via, Receipt: r}); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"outcome": app.ReceiptAccepted})
}

// handleWebhookSES receives SES events through an SNS subscription.
func (s *Server) handleWebhookSES(c *fiber.Ctx) error {
	e, err := s.snsEnvelope(c)
	if err != nil || e == nil {
		if err == nil {
			return c.JSON(fiber.Map{"outcome": "confirmed"})
		}
		return err
	}
	// The message inside the envelope is JSON of its own, bounded as
	// the envelope was.
	err = app.CheckJSONDepth([]byte(e.Message))
	var r provider.Receipt
	if err == nil {
		r, err = awsnotify.SESReceipt(e.Message, e.MessageID)
	}
	if err != nil {
		// Verified but unreadable: retrying will not help, so answer 200.
		s.Log.Warn("SES event not understood", "message_id", e.MessageID, "err", err)
		return c.JSON(fiber.Map{"outcome": "ignored"})
	}
	// The event touches only messages of the accounts that hear this topic
	// and send with the configuration set it names.
	via, err := s.Hooks.SESVia(c.UserContext(), e.TopicArn, r.AccountRef)
	if err != nil {
		return err
	}
	return s.acceptReceipt(c, via, r)
}

// handleWebhookSMS receives SNS SMS delivery-status records: inside a signed
// SNS envelope, or posted directly with the shared secret header. A direct
// post may carry one record or an array of them.
func (s *Server) handleWebhookSMS(c *fiber.Ctx) error {
	var records [][]byte
	// topic stays empty for records posted with the deployment's secret.
	var topic string
	if c.Get("x-amz-sns-message-type") != "" {
		e, err := s.snsEnvelope(c)
		if err != nil || e == nil {
			if err == nil {
				return c.JSON(fiber.Map{"outcome": "confirmed"})
			}
			return err
		}
		if err := app.CheckJSONDepth([]byte(e.Message)); err != nil {
			return err
		}
		if in, ok, err := awsnotify.ParseSMSInbound(e.Message); ok {
			if err != nil {
				return &app.Error{Code: app.EMALFORMED, Message: err.Error()}
			}
			return s.inboundSMS(c, e, in)
		}
		records, topic = [][]byte{[]byte(e.Message)}, e.TopicArn
	} else {
		secret := c.Get("X-Herald-Webhook-Secret")
		if s.Config.SMSStatusSecret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.Config.SMSStatusSecret)) != 1 {
			return app.Errorf(app.EUNAUTHORIZED, "Send the SMS status secret in X-Herald-Webhook-Secret, or post a signed SNS message.")
		}
		body := strings.TrimSpace(string(c.Body()))
		if strings.HasPrefix(body, "[") {
			var list []json.RawMessage
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				return &app.Error{Code: app.EMALFORMED, Message: "The body is not a JSON array of delivery-status records."}
			}
			for _, r := range list {
				records = append(records, r)
			}
		} else {
			records = [][]byte{[]byte(body)}
		}
	}
	via, err := s.Hooks.SMSVia(c.UserContext(), topic)
	if err != nil {
		return err
	}
	// Every record is read before any is stored: a post with one bad
	// record stores none.
	accepted := make([]app.InboxReceipt, 0, len(records))
	outcomes := make([]string, 0, len(records))
	for _, rec := range records {
		r, err := awsnotify.SMSReceipt(rec)
		if err != nil {
			return &app.Error{Code: app.EMALFORMED, Message: err.Error()}
		}
		accepted = append(accepted, app.InboxReceipt{Via: via, Receipt: r})
		outcomes = append(outcomes, app.ReceiptAccepted)
	}
	if err := s.Receipts.Accept(c.UserContext(), accepted...); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"outcomes": outcomes})
}

// inboundSMS records an SMS a person sent to one of the accounts' numbers
// (two-way SMS through the signed SNS envelope only: the record itself
// carries no signature and no time). It is placed on the tenant of the
// account that hears the topic and owns the number; its time, which
// decides the order of STOP and START, is the notification's Timestamp.
func (s *Server) inboundSMS(c *fiber.Ctx, e *awsnotify.Envelope, in awsnotify.SMSInbound) error {
	acct, err := s.Hooks.SMSInboundAccount(c.UserContext(), e.TopicArn, in.To)
	if app.ErrorCode(err) == app.ENOTFOUND {
		s.Log.Warn("inbound SMS to a number no account has", "topic", e.TopicArn, "message_id", e.MessageID)
		return c.JSON(fiber.Map{"outcome": "ignored"})
	} else if err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return &app.Error{Code: app.EMALFORMED, Message: "The SNS notification's Timestamp is not a time."}
	}
	fresh, err := s.Inbound.Record(c.UserContext(), acct.TenantID, app.InboundMessage{
		Channel: app.SMS, Provider: "sns", ExternalID: in.ID, From: in.From, Kind: "text", Body: in.Body,
		ReceivedAt: at.UTC(), ChannelAccountID: &acct.ID,
	})
	if err != nil {
		return err
	}
	if !fresh {
		return c.JSON(fiber.Map{"outcome": "inbound_duplicate"})
	}
	return c.JSON(fiber.Map{"outcome": "inbound"})
}
