package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Sources of preference changes made by the passenger themselves. Staff
// changes are ChangeSourceAPI and ChangeSourceConsole.
const (
	ChangeSourceWhatsAppKeyword  = "whatsapp_keyword"
	ChangeSourceSMSKeyword       = "sms_keyword"
	ChangeSourceEmailUnsubscribe = "email_unsubscribe"
)

// Keyword is a passenger's STOP or START sent as a whole message.
type Keyword struct {
	// Word is the keyword as Herald knows it (STOP, STOPP, ABMELDEN,
	// START, ANMELDEN).
	Word string
	// OptOut is true for the stop words, false for the start words.
	OptOut bool
	// German is true for the German words, so that the confirmation
	// answers in the passenger's language.
	German bool
}

var keywords = map[string]Keyword{
	"STOP":     {Word: "STOP", OptOut: true},
	"STOPP":    {Word: "STOPP", OptOut: true, German: true},
	"ABMELDEN": {Word: "ABMELDEN", OptOut: true, German: true},
	"START":    {Word: "START"},
	"ANMELDEN": {Word: "ANMELDEN", German: true},
}

// ParseKeyword reads a message as a preference keyword: only a message that
// is the keyword and nothing else counts ("stop", " Stopp \n" do; "stop the
// reminders, please" does not, since a passenger writing a sentence expects a
// person to read it). Case and surrounding whitespace do not matter.
func ParseKeyword(body string) (Keyword, bool) {
	k, ok := keywords[strings.ToUpper(strings.TrimSpace(body))]
	return k, ok
}

// PreferenceChange is one decision about a contact's channels: opt out of
// them or back in, made at At (for a keyword, the provider's timestamp of
// the passenger's message) by Actor through Source.
type PreferenceChange struct {
	Channels []Channel
	OptOut   bool
	At       time.Time
	Source   string
	Actor    Actor
	// IfNewer leaves a channel alone when a later decision about it was
	// already taken: a passenger's STOP and START delivered out of order are
	// decided by when the passenger sent them, not by when they arrived.
	IfNewer bool
}

// ApplyPreference applies p to c. It returns the history entry when the
// contact's opt-outs changed (nil otherwise), and whether p decided any
// channel (false when every channel had a later decision). The time of
// the decision is kept per channel (Contact.OptOutAt) even when the state
// stays, so that an older keyword arriving later cannot undo it.
func ApplyPreference(c *Contact, p PreferenceChange) (*ContactChange, bool) {
	if c.OptOutAt == nil {
		c.OptOutAt = Attrs{}
	}
	decided := false
	next := StringList{}
	for _, ch := range OptOutChannels {
		was := slices.Contains(c.OptedOut, string(ch))
		now := was
		if slices.Contains(p.Channels, ch) && !(p.IfNewer && p.At.Before(c.decidedAt(ch))) {
			now, decided = p.OptOut, true
			c.OptOutAt[string(ch)] = p.At.UTC().Format(time.RFC3339Nano)
		}
		if now {
			next = append(next, string(ch))
		}
	}
	old, now := strings.Join(c.OptedOut, ","), strings.Join(next, ",")
	if old == now {
		return nil, decided
	}
	c.OptedOut = next
	return &ContactChange{
		TenantID: c.TenantID, ContactID: c.ID, Field: "opted_out", OldValue: &old, NewValue: &now,
		Source: p.Source, ActorType: p.Actor.Type, ActorID: p.Actor.ID, ActorLabel: p.Actor.Label, At: p.At,
	}, decided
}

// decidedAt is when the decision behind the channel's current state was
// made; zero when none was recorded.
func (c *Contact) decidedAt(ch Channel) time.Time {
	t, err := time.Parse(time.RFC3339Nano, c.OptOutAt[string(ch)])
	if err != nil {
		return time.Time{}
	}
	return t
}

// UnsubscribeLinks makes and checks the one-click unsubscribe links of
// optional e-mails (RFC 8058). A link names the tenant, the contact and the
// message it came with, signed with HMAC-SHA256 under a key derived from
// the deployment's secret key. It does not expire: a passenger may click it
// in a months-old e-mail, and unsubscribing twice changes nothing.
type UnsubscribeLinks struct {
	// BaseURL is the deployment's public URL; links are BaseURL/unsubscribe/{token}.
	BaseURL string
	key     []byte
}

// NewUnsubscribeLinks derives the links' signing key from the deployment's
// secret key (its own key, so that a link never says anything about the
// key that seals channel secrets).
func NewUnsubscribeLinks(baseURL string, secretKey []byte) *UnsubscribeLinks {
	return &UnsubscribeLinks{BaseURL: strings.TrimRight(baseURL, "/"), key: linkKey(secretKey, "herald unsubscribe links v1")}
}

// linkKey derives the signing key of one kind of public link from the
// deployment's secret key: each kind (unsubscribe links, file links) has
// its own, named by purpose, so a token of one kind never verifies as
// another.
func linkKey(secretKey []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, secretKey)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

// linkMAC is the HMAC-SHA256 of payload under a link key.
func linkMAC(key []byte, payload ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range payload {
		m.Write(p)
	}
	return m.Sum(nil)
}

// UnsubscribeTarget is what an unsubscribe link names.
type UnsubscribeTarget struct {
	TenantID  uuid.UUID
	ContactID uuid.UUID
	MessageID uuid.UUID
}

// unsubscribeIDs is the length of a token's payload: three UUIDs.
const unsubscribeIDs = 3 * 16

// Token signs the target: base64url of the three ids and their MAC.
func (l *UnsubscribeLinks) Token(t UnsubscribeTarget) string {
	payload := make([]byte, 0, unsubscribeIDs+sha256.Size)
	payload = append(payload, t.TenantID[:]...)
	payload = append(payload, t.ContactID[:]...)
	payload = append(payload, t.MessageID[:]...)
	return base64.RawURLEncoding.EncodeToString(append(payload, l.mac(payload)...))
}

// URL is the https link of the target, for the List-Unsubscribe header.
func (l *UnsubscribeLinks) URL(t UnsubscribeTarget) string {
	return l.BaseURL + "/unsubscribe/" + l.Token(t)
}

// Parse checks a token and returns its target. Anything that is not a token
// this deployment signed, to the bit, is EUNAUTHORIZED; the MAC is compared
// in constant time.
func (l *UnsubscribeLinks) Parse(token string) (UnsubscribeTarget, error) {
	bad := &Error{Code: EUNAUTHORIZED, Reason: "invalid_unsubscribe_link", Message: "This unsubscribe link is not valid. Use the link of the e-mail exactly as it came."}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) != unsubscribeIDs+sha256.Size {
		return UnsubscribeTarget{}, bad
	}
	payload, sum := raw[:unsubscribeIDs], raw[unsubscribeIDs:]
	if !hmac.Equal(sum, l.mac(payload)) {
		return UnsubscribeTarget{}, bad
	}
	var t UnsubscribeTarget
	copy(t.TenantID[:], payload[0:16])
	copy(t.ContactID[:], payload[16:32])
	copy(t.MessageID[:], payload[32:48])
	return t, nil
}

func (l *UnsubscribeLinks) mac(payload []byte) []byte { return linkMAC(l.key, payload) }

// PreferenceTrigger is the trigger event of the confirmation Herald sends
// when a passenger's keyword changed their preferences. It is outside the
// registry, so transactional: it reaches the passenger on the channel they
// just opted out of, as the carriers' rules for STOP expect.
const PreferenceTrigger = "PREFERENCE_CONFIRMATION"

// confirmationText is the answer to a keyword, in German when the passenger
// wrote a German keyword or their contact's locale is German.
func confirmationText(k Keyword, ch Channel, locale string) string {
	german := k.German || strings.HasPrefix(strings.ToLower(locale), "de")
	name := map[Channel]string{WhatsApp: "WhatsApp", SMS: "SMS"}[ch]
	switch {
	case k.OptOut && german:
		return fmt.Sprintf("Sie erhalten über %s keine Erinnerungen und Angebote mehr. Buchungsbestätigungen, Änderungen und Störungsmeldungen zu Ihrer Reise senden wir weiterhin. Antworten Sie START, um sie wieder zu erhalten.", name)
	case k.OptOut:
		return fmt.Sprintf("You will no longer receive reminders and offers on %s. Booking confirmations, changes and incident notices about your trip are still sent. Reply START to receive them again.", name)
	case german:
		return fmt.Sprintf("Sie erhalten über %s wieder Erinnerungen und Angebote. Antworten Sie STOPP, um sie abzubestellen.", name)
	}
	return fmt.Sprintf("You will receive reminders and offers on %s again. Reply STOP to opt out.", name)
}

// PreferenceTx lists the statements Preferences runs.
type PreferenceTx interface {
	Tx
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	LockContact(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	SaveContact(ctx context.Context, c *Contact) error
	InsertContactChanges(ctx context.Context, changes []*ContactChange) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Preferences serves the passenger's own preference changes that come
// without a login: the unsubscribe links of optional e-mails.
type Preferences struct {
	Store Store[PreferenceTx]
	Links *UnsubscribeLinks
	Now   Clock
}

// Unsubscription is what an unsubscribe link is about, for its page.
type Unsubscription struct {
	// TenantName is who sends the e-mails.
	TenantName string
	// OptedOut is true once the contact is opted out of e-mail.
	OptedOut bool
}

// UnsubscribeActor is the passenger following an e-mail's unsubscribe link.
var UnsubscribeActor = Actor{Type: ActorSystem, Label: "passenger: e-mail unsubscribe link"}

// Lookup checks a link and says whom it is about, changing nothing (the
// page a GET shows, with the button that unsubscribes). A link that does
// not verify is EUNAUTHORIZED; one whose tenant or contact is gone is
// ENOTFOUND.
func (p *Preferences) Lookup(ctx context.Context, token string) (*Unsubscription, error) {
	t, err := p.target(token)
	if err != nil {
		return nil, err
	}
	var out *Unsubscription
	err = p.Store.InTenant(ctx, t.TenantID, func(tx PreferenceTx) error {
		tenant, c, err := unsubscribeTarget(ctx, tx, t, false)
		if err != nil {
			return err
		}
		out = &Unsubscription{TenantName: tenant.Name, OptedOut: c.OptedOutOf(Email)}
		return nil
	})
	return out, err
}

// Unsubscribe opts the link's contact out of e-mail, recorded on its
// history with the source email_unsubscribe. Following a link again (or a
// mail client's retry) changes nothing and records nothing.
func (p *Preferences) Unsubscribe(ctx context.Context, token string) (*Unsubscription, error) {
	t, err := p.target(token)
	if err != nil {
		return nil, err
	}
	var out *Unsubscription
	err = p.Store.InTenant(ctx, t.TenantID, func(tx PreferenceTx) error {
		tenant, c, err := unsubscribeTarget(ctx, tx, t, true)
		if err != nil {
			return err
		}
		out = &Unsubscription{TenantName: tenant.Name, OptedOut: true}
		if c.OptedOutOf(Email) {
			return nil
		}
		now := p.Now()
		change, _ := ApplyPreference(c, PreferenceChange{Channels: []Channel{Email}, OptOut: true, At: now,
			Source: ChangeSourceEmailUnsubscribe, Actor: UnsubscribeActor})
		c.UpdatedAt = now
		if err := tx.SaveContact(ctx, c); err != nil {
			return err
		}
		if err := tx.InsertContactChanges(ctx, []*ContactChange{change}); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, UnsubscribeActor.Entry(&t.TenantID, "contact.opt_out", "contact", c.ID.String(),
			map[string]any{"channels": []string{string(Email)}, "message_id": t.MessageID.String()}))
	})
	return out, err
}

// target checks a link and returns what it names. A link naming no tenant
// at all (the nil id) answers as one whose tenant is gone: there is no
// tenant to open a transaction in.
func (p *Preferences) target(token string) (UnsubscribeTarget, error) {
	t, err := p.Links.Parse(token)
	if err == nil && t.TenantID == uuid.Nil {
		return UnsubscribeTarget{}, Errorf(ENOTFOUND, "Tenant %s not found.", t.TenantID)
	}
	return t, err
}

// unsubscribeTarget reads the link's tenant and contact (locked to change
// it); the contact is looked up in the link's tenant only.
func unsubscribeTarget(ctx context.Context, tx PreferenceTx, t UnsubscribeTarget, lock bool) (*Tenant, *Contact, error) {
	tenant, err := tx.TenantByID(ctx, t.TenantID)
	if err != nil {
		return nil, nil, err
	}
	var c *Contact
	if lock {
		c, err = tx.LockContact(ctx, t.TenantID, t.ContactID)
	} else {
		c, err = tx.ContactByID(ctx, t.TenantID, t.ContactID)
	}
	if err != nil {
		return nil, nil, err
	}
	return tenant, c, nil
}
