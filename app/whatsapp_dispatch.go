package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// ReasonWhatsAppTemplateRequired fails a WhatsApp message that would open
// a conversation outside the recipient's customer-service window while its
// template names no approved Meta template. It is both the failed_reason
// and the error_code; a fallback chain continues as after any refusal.
const ReasonWhatsAppTemplateRequired = "whatsapp_template_required"

// WhatsAppTx lists the statements the dispatcher's WhatsApp rules run.
type WhatsAppTx interface {
	LastWhatsAppInbound(ctx context.Context, tenantID, accountID uuid.UUID, contactID *uuid.UUID, address string) (*time.Time, error)
	MetaTemplate(ctx context.Context, tenantID, accountID uuid.UUID, name, language string) (*MetaTemplate, error)
}

// whatsAppPlan decides how a WhatsApp message goes out through Meta.
// Inside the recipient's customer-service window (they wrote to this
// account's number less than 24 hours ago) it goes as the rendered text.
// Outside it Meta delivers only approved templates, so it goes as its
// template's Meta template, if Meta approved it for this account; if not,
// refusal explains why, and the message fails without calling Meta.
func (d *Dispatcher) whatsAppPlan(ctx context.Context, tx DispatchPlanTx, m *Message, acct *ChannelAccount) (*provider.WhatsAppTemplate, string, error) {
	if m.WhatsAppTemplateOnly {
		return d.templatePlan(ctx, tx, m, acct,
			"Meta reported the recipient's 24-hour window closed (131047) after accepting the text, so WhatsApp only delivers an approved template. ")
	}
	now := d.Now()
	last, err := tx.LastWhatsAppInbound(ctx, m.TenantID, acct.ID, m.ContactID, m.ToAddress)
	if err != nil {
		return nil, "", err
	}
	if last != nil && now.Sub(*last) < WhatsAppWindow {
		return nil, "", nil
	}
	return d.templatePlan(ctx, tx, m, acct,
		"The recipient has not written to this WhatsApp number in the last 24 hours, so WhatsApp only delivers an approved template. ")
}

// templatePlan returns the message's approved Meta template with its
// parameters, or why there is none (outside prefixes the reason).
func (d *Dispatcher) templatePlan(ctx context.Context, tx DispatchPlanTx, m *Message, acct *ChannelAccount, outside string) (*provider.WhatsAppTemplate, string, error) {
	var t *Template
	var err error
	if m.TemplateID != nil {
		t, err = tx.TemplateByID(ctx, m.TenantID, *m.TemplateID)
		if err != nil && ErrorCode(err) != ENOTFOUND {
			return nil, "", err
		}
	}
	if t == nil {
		// Console test messages have no template: Meta delivers them only
		// inside the window, as it would any text.
		return nil, outside + "This message has no template to take a Meta template from; write to the account's number from this phone first, then send it within 24 hours.", nil
	}
	spec, err := t.Spec()
	if err != nil {
		return nil, "", err
	}
	if spec == nil {
		return nil, outside + "Its template names no Meta template.", nil
	}
	mt, err := tx.MetaTemplate(ctx, m.TenantID, acct.ID, spec.Name, spec.Language)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return nil, outside + fmt.Sprintf("Meta template %s (%s) does not exist for this account; submit it for approval.", spec.Name, spec.Language), nil
	case err != nil:
		return nil, "", err
	case !mt.Approved():
		return nil, outside + fmt.Sprintf("Meta template %s (%s) is %s.", spec.Name, spec.Language, mt.Status), nil
	}
	vars, err := d.messageVars(ctx, tx, m)
	if err != nil {
		return nil, "", err
	}
	wt := &provider.WhatsAppTemplate{Name: spec.Name, Language: spec.Language, Parameters: make([]string, len(spec.Parameters)),
		HeaderFormat: mt.HeaderFormat}
	for i, name := range spec.Parameters {
		wt.Parameters[i] = vars[strings.ToLower(name)]
	}
	return wt, "", nil
}

// retryAsTemplate handles Meta refusing free-form text as outside the
// window (131047) although Herald saw the recipient write less than 24
// hours ago (a clock apart, a reply Herald never received): Meta's view
// of the window is the one that counts, so the message goes out once more
// as its approved Meta template, if it has one. Otherwise, and for any
// other outcome, the send's own result stands.
func (d *Dispatcher) retryAsTemplate(ctx context.Context, p provider.Provider, out provider.Outbound, s *send,
	externalID string, sendErr error) (string, error) {
	m, acct := s.message, s.account
	if sendErr == nil || out.Template != nil || m.Channel != WhatsApp || acct.Provider != "meta" {
		return externalID, sendErr
	}
	if pe := provider.Classify(sendErr); pe.Code != "131047" {
		return externalID, sendErr
	}
	var wt *provider.WhatsAppTemplate
	err := d.stores.Send.InTenant(ctx, m.TenantID, func(tx SendTx) (err error) {
		wt, _, err = d.templatePlan(ctx, tx, m, acct, "")
		return err
	})
	if err != nil || wt == nil {
		return externalID, sendErr
	}
	d.note(ctx, m, map[string]any{"error_code": "131047", "error": "Meta says the 24-hour window is closed",
		"retry": "as Meta template " + wt.Name + " (" + wt.Language + ")"})
	// The files fit the template instead of the text.
	out.Template, out.Body, out.Attachments = wt, m.Body, d.outboundFiles(s.files)
	s.notSent = d.fitFiles(m, acct, &out)
	return d.send(ctx, p, out)
}

// messageVars are the variables the message's text was rendered with: its
// event's context and its recipient there (RecipientVars), so the Meta
// template's parameters say what the text said.
func (d *Dispatcher) messageVars(ctx context.Context, tx DispatchPlanTx, m *Message) (map[string]string, error) {
	if m.EventID == nil {
		return TemplateVars(nil, Recipient{}), nil
	}
	e, err := tx.EventByID(ctx, m.TenantID, *m.EventID, false)
	if err != nil {
		return nil, err
	}
	recipients, err := e.DecodeRecipients()
	if err != nil {
		return nil, err
	}
	// As Router.Plan: the event's recipient, named after its contact when
	// the event gave no name.
	rc, _, ok := RecipientOf(recipients, m)
	if (!ok || rc.Name == "") && m.ContactID != nil {
		c, err := tx.ContactByID(ctx, m.TenantID, *m.ContactID)
		if err != nil {
			return nil, err
		}
		if ok {
			rc.Name = c.Name
		} else {
			rc = c.Recipient()
		}
	}
	return RecipientVars(e, rc)
}
