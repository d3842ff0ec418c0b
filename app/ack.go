package app

import (
	"context"
	"html"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Ways a message is acknowledged (messages.ack_via).
const (
	// AckViaWhatsAppButton: the passenger tapped the quick-reply button of
	// the WhatsApp template (Meta's button or interactive button_reply
	// webhook, whose context names the message).
	AckViaWhatsAppButton = "whatsapp_button"
	// AckViaLink: the passenger confirmed on the page of the signed link
	// an SMS or e-mail carried.
	AckViaLink = "link"
)

// CallbackMessageAcknowledged is the status callback of a message its
// passenger acknowledged.
const CallbackMessageAcknowledged = "message.acknowledged"

// safetyEvents are the trigger events whose messages always ask the
// passenger to acknowledge them; a tenant marks more by giving an event an
// ACKNOWLEDGED deadline (StageAcknowledged).
var safetyEvents = map[string]bool{
	"DEPARTURE_CHANGED": true, "SERVICE_LEG_CANCELLED": true, "TRIP_CANCELLED": true, "INCIDENT_BROADCAST": true,
}

// SafetyEvent reports whether messages of the event always ask for
// acknowledgement.
func SafetyEvent(trigger string) bool { return safetyEvents[trigger] }

// AckLabel is the quick-reply and link text that acknowledges, in the
// message's language: "Verstanden" in German, else "Got it".
func AckLabel(locale string) string {
	if strings.HasPrefix(strings.ToLower(locale), "de") {
		return "Verstanden"
	}
	return "Got it"
}

// AckLinkTTL is how long an acknowledgement link works: past it the
// trip is over, and a late tap would only mislead the call list.
const AckLinkTTL = 14 * 24 * time.Hour

// AckLinks makes and checks the signed, expiring links
// (BaseURL/ack/{token}) by which a passenger acknowledges an SMS or
// e-mail. Their tokens are file links' (linkToken: tenant, message,
// expiry), signed under a key derived from the deployment's secret key for
// this purpose alone (linkKey), so a token of another kind never verifies
// as one.
type AckLinks struct {
	// BaseURL is the deployment's public URL.
	BaseURL string
	key     []byte
}

// NewAckLinks derives the links' signing key from the deployment's secret
// key.
func NewAckLinks(baseURL string, secretKey []byte) *AckLinks {
	return &AckLinks{BaseURL: strings.TrimRight(baseURL, "/"), key: linkKey(secretKey, "herald acknowledgement links v1")}
}

// AckTarget is what an acknowledgement link names.
type AckTarget struct {
	TenantID  uuid.UUID
	MessageID uuid.UUID
	Expires   time.Time
}

// Token signs the target.
func (l *AckLinks) Token(t AckTarget) string {
	return linkToken{TenantID: t.TenantID, ID: t.MessageID, Expires: t.Expires}.seal(l.key)
}

// URL is the link acknowledging message m, made at now, for AckLinkTTL.
func (l *AckLinks) URL(m *Message, now time.Time) string {
	return l.BaseURL + "/ack/" + l.Token(AckTarget{TenantID: m.TenantID, MessageID: m.ID, Expires: now.Add(AckLinkTTL)})
}

// Errors of a link that cannot acknowledge, for its page.
var (
	errAckLinkInvalid = &Error{Code: EUNAUTHORIZED, Reason: "invalid_ack_link",
		Message: "This confirmation link is not valid. Use the link of the message exactly as it came."}
	errAckLinkExpired = &Error{Code: EUNAUTHORIZED, Reason: "expired_ack_link",
		Message: "This confirmation link has expired. If you still need to confirm, please call us."}
)

// Parse checks a token at now: anything this deployment did not sign, to
// the bit, is EUNAUTHORIZED invalid_ack_link (the MAC is compared in
// constant time); a signed token past its expiry is EUNAUTHORIZED
// expired_ack_link.
func (l *AckLinks) Parse(token string, now time.Time) (AckTarget, error) {
	t, ok := openLinkToken(token)
	if !ok || !t.signedBy(l.key) {
		return AckTarget{}, errAckLinkInvalid
	}
	if !now.Before(t.Expires) {
		return AckTarget{}, errAckLinkExpired
	}
	return AckTarget{TenantID: t.TenantID, MessageID: t.ID, Expires: t.Expires}, nil
}

// Acknowledgement is one passenger's confirmation of one message.
type Acknowledgement struct {
	TenantID  uuid.UUID
	MessageID uuid.UUID
	// Via is AckViaWhatsAppButton or AckViaLink.
	Via string
	At  time.Time
	// Detail goes on the timeline (the reply's wamid and text).
	Detail map[string]any
}

// AckTx lists the statements Acknowledgements runs.
type AckTx interface {
	CallbackEnqueueTx
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	// MessageByExternalID is the tenant's message the provider knows by
	// externalID (ENOTFOUND when the tenant has none).
	MessageByExternalID(ctx context.Context, tenantID uuid.UUID, provider, externalID string) (*Message, error)
	// AccountByPhoneNumberID is InboundTx's.
	AccountByPhoneNumberID(ctx context.Context, tenantID uuid.UUID, phoneNumberID string) (*ChannelAccount, error)
	// AcknowledgeMessage sets the message's acknowledged_at and ack_via
	// when it has none and reports whether it did (first wins).
	AcknowledgeMessage(ctx context.Context, a *Acknowledgement) (bool, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
}

// Acknowledgements records passengers' acknowledgements of the messages
// that ask for them.
type Acknowledgements struct {
	Store Store[AckTx]
	Links *AckLinks
	// Callbacks makes the message.acknowledged callbacks; nil: none.
	Callbacks *Callbacks
	Now       Clock
}

// acknowledge is the one write of an acknowledgement, in the message's
// tenant's transaction: the first one sets the message's acknowledged_at
// and ack_via (a conditional update, so two at once still make one), adds
// the timeline entry and makes the callback; any later one (a replayed
// webhook, a second tap) changes nothing and reports false. The status is
// left as it is: an acknowledgement is not a step of the status order.
func (s *Acknowledgements) acknowledge(ctx context.Context, tx AckTx, a *Acknowledgement) (bool, error) {
	ok, err := tx.AcknowledgeMessage(ctx, a)
	if err != nil || !ok {
		return false, err
	}
	detail := map[string]any{"acknowledged": true, "via": a.Via}
	for k, v := range a.Detail {
		detail[k] = v
	}
	if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: a.TenantID, MessageID: a.MessageID, Source: SourceWebhook,
		At: a.At, Detail: detail}); err != nil {
		return false, err
	}
	return true, s.Callbacks.Notify(ctx, tx, a.TenantID, a.MessageID, CallbackMessageAcknowledged, CallbackNote{})
}

// ButtonReply is a WhatsApp passenger's tap on a quick-reply button, as
// the tenant's Meta webhook reported it.
type ButtonReply struct {
	// ReplyID is Meta's id of the reply itself.
	ReplyID string
	// ContextID is the wamid of the message the button belongs to.
	ContextID string
	// From is the sender, E.164.
	From string
	// PhoneNumberID is the business number that received the reply.
	PhoneNumberID string
	// Text is the button's label.
	Text string
	At   time.Time
}

// FromButton acknowledges the message a quick-reply button belongs to,
// within the tenant whose webhook it came through: the message must be
// the tenant's (found by its wamid in the tenant's scope), sent from the
// number that received the reply and to the number that sent it.
// Anything else (another tenant's wamid, a reply relayed through another
// number, a button on a message that asks for nothing) acknowledges
// nothing and reports false.
func (s *Acknowledgements) FromButton(ctx context.Context, tenantID uuid.UUID, r ButtonReply) (bool, error) {
	if r.ContextID == "" {
		return false, nil
	}
	if r.At.IsZero() {
		r.At = s.Now()
	}
	var done bool
	err := s.Store.InTenant(ctx, tenantID, func(tx AckTx) error {
		m, err := tx.MessageByExternalID(ctx, tenantID, "meta", r.ContextID)
		if ErrorCode(err) == ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		acct, err := tx.AccountByPhoneNumberID(ctx, tenantID, r.PhoneNumberID)
		if ErrorCode(err) == ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		from, err := NormalizePhone(r.From)
		if err != nil || m.ChannelAccountID == nil || *m.ChannelAccountID != acct.ID || m.ToAddress != from || m.Channel != WhatsApp {
			return nil
		}
		done, err = s.acknowledge(ctx, tx, &Acknowledgement{TenantID: tenantID, MessageID: m.ID, Via: AckViaWhatsAppButton, At: r.At,
			Detail: map[string]any{"reply_id": r.ReplyID, "button": r.Text}})
		return err
	})
	return done, err
}

// AckPage is what an acknowledgement link's page shows.
type AckPage struct {
	// TenantName is who sent the message.
	TenantName string
	// Subject is the message's subject (an e-mail's), else a plain
	// description, to say what is confirmed.
	Subject string
	// Label is the confirming button's text in the message's language.
	Label string
	// AcknowledgedAt is set once the message is acknowledged.
	AcknowledgedAt *time.Time
}

// LookupLink checks a link and says what it confirms, changing nothing:
// the page a GET shows, whose one button confirms. Link previews and
// mail scanners fetch links unasked; a GET that acknowledged would tell
// staff a passenger read a safety notice nobody opened.
func (s *Acknowledgements) LookupLink(ctx context.Context, token string) (*AckPage, error) {
	return s.link(ctx, token, false)
}

// FromLink acknowledges the message a signed link names (the page's
// button). A link that does not verify is EUNAUTHORIZED invalid_ack_link,
// one past its expiry expired_ack_link; a message that is gone is
// ENOTFOUND. Confirming again shows the first confirmation.
func (s *Acknowledgements) FromLink(ctx context.Context, token string) (*AckPage, error) {
	return s.link(ctx, token, true)
}

func (s *Acknowledgements) link(ctx context.Context, token string, confirm bool) (*AckPage, error) {
	now := s.Now()
	t, err := s.Links.Parse(token, now)
	if err != nil {
		return nil, err
	}
	var page *AckPage
	err = s.Store.InTenant(ctx, t.TenantID, func(tx AckTx) error {
		tenant, err := tx.TenantByID(ctx, t.TenantID)
		if err != nil {
			return err
		}
		m, err := tx.MessageByID(ctx, t.TenantID, t.MessageID, false)
		if err != nil {
			return err
		}
		if confirm && m.AcknowledgedAt == nil {
			if _, err := s.acknowledge(ctx, tx, &Acknowledgement{TenantID: m.TenantID, MessageID: m.ID, Via: AckViaLink, At: now,
				Detail: map[string]any{"channel": string(m.Channel)}}); err != nil {
				return err
			}
			if m, err = tx.MessageByID(ctx, t.TenantID, t.MessageID, false); err != nil {
				return err
			}
		}
		page = &AckPage{TenantName: tenant.Name, Subject: "“" + m.Subject + "”", Label: AckLabel(deref(m.Locale)), AcknowledgedAt: m.AcknowledgedAt}
		if m.Subject == "" {
			// An SMS or WhatsApp text has no subject, and the event's name
			// means nothing to a passenger.
			page.Subject = "our message about your trip"
		}
		return nil
	})
	return page, err
}

// withAckLink adds the acknowledgement link to a message that asks for
// acknowledgement, at the send, so that the stored body stays the content
// (a resend signs a fresh link): the SMS's text and a WhatsApp free-form
// text end with it; an e-mail's content (returned, for the layout) ends
// with it as a button-like link. A WhatsApp template cannot take a link
// Herald adds: there the template's own QUICK_REPLY button acknowledges,
// when the approved template has one (see README, Acknowledgements). It
// returns the body the e-mail layout wraps.
func (d *Dispatcher) withAckLink(s *send, out *provider.Outbound) string {
	m := s.message
	if d.opts.Acks == nil || !s.askAck || (m.Channel == WhatsApp && out.Template != nil) {
		return m.Body
	}
	link, locale := d.opts.Acks.URL(m, d.Now()), deref(m.Locale)
	if m.Channel == Email {
		return m.Body + `<p><a href="` + html.EscapeString(link) + `" style="font-weight:bold;">` + html.EscapeString(AckLabel(locale)) + `</a></p>`
	}
	out.Body = m.Body + ackTextSuffix(link, locale)
	return out.Body
}

// ackTextSuffix is what a text message that asks for acknowledgement
// ends with: the prompt in the message's language and the link.
func ackTextSuffix(link, locale string) string {
	prompt := "Please confirm you got this: "
	if strings.HasPrefix(strings.ToLower(locale), "de") {
		prompt = "Bitte bestätigen Sie den Erhalt: "
	}
	return "\n\n" + prompt + link
}

// smsSuffix is the text the link will add to an SMS, for counting its
// parts when it is stored (the link itself is signed at the send). Every
// link of a deployment has the same length (the public URL, "/ack/" and a
// token of fixed size in base64url, whose characters are all one GSM-7
// septet and one UTF-16 unit), so a token of as many "A"s counts exactly.
func (l *AckLinks) smsSuffix(locale string) string {
	return ackTextSuffix(l.BaseURL+"/ack/"+strings.Repeat("A", linkTokenLen), locale)
}
