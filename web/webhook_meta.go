package web

import (
	"math"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/meta"
)

// errMetaVerify answers every failed subscription check alike, whether the
// path names nothing or the verify token is wrong, so that the answer tells
// nobody which tenants or accounts exist.
var errMetaVerify = app.Errorf(app.EFORBIDDEN, "The verify token does not match.")

// errMetaSignature answers every refused webhook post alike, for the same
// reason.
var errMetaSignature = app.Errorf(app.EUNAUTHORIZED, "The X-Hub-Signature-256 signature does not match.")

// metaCredentials resolves the path of a Meta webhook: an account's
// unguessable token (/webhooks/meta/a/{token}) or, on the older path, the
// tenant's slug. Nil when it names nothing.
func (s *Server) metaCredentials(c *fiber.Ctx) (*app.MetaCredentials, error) {
	var creds *app.MetaCredentials
	var err error
	if token := c.Params("token"); token != "" {
		creds, err = s.Hooks.MetaCredentialsByToken(c.UserContext(), token)
	} else {
		creds, err = s.Hooks.MetaCredentials(c.UserContext(), c.Params("tenant"))
	}
	if app.ErrorCode(err) == app.ENOTFOUND || app.ErrorCode(err) == app.EINVALID {
		return nil, nil
	}
	return creds, err
}

// handleWebhookMetaVerify answers Meta's subscription check: the challenge
// back when the verify token is one of the tenant's Meta accounts', else
// 403, the same 403 for a path that names nothing. Checks are throttled per
// client address, so neither tokens nor paths can be guessed by trying.
func (s *Server) handleWebhookMetaVerify(c *fiber.Ctx) error {
	wait, err := s.Hooks.ThrottleMetaVerify(c.UserContext(), c.IP())
	if err != nil {
		return err
	}
	if wait > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return app.Errorf(app.ETOOMANY, "Too many subscription checks from this address; try again in %d seconds.", int(math.Ceil(wait.Seconds())))
	}
	creds, err := s.metaCredentials(c)
	if err != nil {
		return err
	}
	if creds == nil {
		return errMetaVerify
	}
	query, _ := url.ParseQuery(string(c.Request().URI().QueryString()))
	for _, a := range creds.Accounts {
		if challenge, ok := meta.VerifyChallenge(query, a.VerifyToken); ok {
			c.Type("txt")
			return c.SendString(challenge)
		}
	}
	return errMetaVerify
}

// handleWebhookMeta receives a tenant's WhatsApp statuses and inbound
// messages. The signature is checked over the raw body before anything is
// parsed; statuses go to the receipt inbox, messages onto the contact.
func (s *Server) handleWebhookMeta(c *fiber.Ctx) error {
	creds, err := s.metaCredentials(c)
	if err != nil {
		return err
	}
	if creds == nil {
		return errMetaSignature
	}
	body, header := c.Body(), c.Get("X-Hub-Signature-256")
	// Every account whose secret verifies is remembered: statuses bind to
	// the accounts that signed them (and whose number they name).
	var verified []uuid.UUID
	for _, a := range creds.Accounts {
		if meta.VerifySignature(a.AppSecret, body, header) {
			verified = append(verified, a.ID)
		}
	}
	if len(verified) == 0 {
		s.Log.Warn("Meta webhook signature rejected", "tenant_id", creds.TenantID, "has_header", header != "")
		return errMetaSignature
	}
	hook, err := meta.ParseWebhook(body)
	if err != nil {
		// Signed by Meta but not understood: a retry will not change that.
		s.Log.Warn("Meta webhook not understood", "tenant_id", creds.TenantID, "err", err)
		return c.JSON(fiber.Map{"outcome": "ignored"})
	}
	outcomes := map[string]int{}
	// The statuses go to the inbox in one insert, each bound to what it
	// came through; the receipt applier applies them.
	accepted := make([]app.InboxReceipt, len(hook.Receipts))
	for i, r := range hook.Receipts {
		accepted[i] = app.InboxReceipt{Via: creds.Via(verified, r.AccountRef), Receipt: r}
	}
	if err := s.Receipts.Accept(c.UserContext(), accepted...); err != nil {
		return err
	}
	if len(accepted) > 0 {
		outcomes[app.ReceiptAccepted] = len(accepted)
	}
	for _, in := range hook.Inbound {
		fresh, err := s.Inbound.Record(c.UserContext(), creds.TenantID, app.InboundMessage{
			Channel: app.WhatsApp, Provider: "meta", ExternalID: in.ExternalID, From: "+" + in.From,
			Kind: in.Type, Body: in.Text, ReceivedAt: in.At, PhoneNumberID: in.PhoneNumberID,
		})
		if err != nil {
			return err
		}
		if fresh {
			outcomes["inbound"]++
		} else {
			outcomes["inbound_duplicate"]++
		}
		if err := s.acknowledgeButton(c, creds.TenantID, in, outcomes); err != nil {
			return err
		}
	}
	if err := s.applyTemplateUpdates(c, creds.TenantID, hook.TemplateUpdates, outcomes); err != nil {
		return err
	}
	if err := s.applyNumberUpdates(c, creds.TenantID, verified, hook.NumberUpdates, outcomes); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"outcomes": outcomes})
}

// acknowledgeButton acknowledges the message whose quick-reply button an
// inbound reply tapped, within the tenant the webhook's path and signature
// name (a replay acknowledges nothing again).
func (s *Server) acknowledgeButton(c *fiber.Ctx, tenantID uuid.UUID, in meta.Inbound, outcomes map[string]int) error {
	if in.ButtonText == "" || in.ContextID == "" || s.Acks == nil {
		return nil
	}
	ok, err := s.Acks.FromButton(c.UserContext(), tenantID, app.ButtonReply{ReplyID: in.ExternalID, ContextID: in.ContextID,
		From: "+" + in.From, PhoneNumberID: in.PhoneNumberID, Text: in.ButtonText, At: in.At})
	if ok {
		outcomes["acknowledged"]++
	}
	return err
}

// applyTemplateUpdates records Meta's template reviews
// (message_template_status_update) for the tenant whose app secret signed
// the post; a WABA none of its accounts has changes nothing.
func (s *Server) applyTemplateUpdates(c *fiber.Ctx, tenantID uuid.UUID, us []meta.TemplateUpdate, outcomes map[string]int) error {
	for _, u := range us {
		ok, err := s.MetaTemplates.ApplyStatusUpdate(c.UserContext(), tenantID, app.MetaTemplateUpdate{
			WABAID: u.WABAID, Event: u.Event, TemplateID: u.TemplateID, Name: u.Name, Language: u.Language,
			Category: u.Category, Reason: u.Reason,
		})
		switch {
		case err != nil:
			return err
		case ok:
			outcomes["template_status"]++
		default:
			outcomes["template_status_unknown_waba"]++
		}
	}
	return nil
}

// applyNumberUpdates records Meta's quality and account updates on the
// accounts they belong to: the tenant's Meta accounts of the update's
// WABA among those whose app secret signed the post. A WABA none of them
// has, older news and another number's news change nothing.
func (s *Server) applyNumberUpdates(c *fiber.Ctx, tenantID uuid.UUID, verified []uuid.UUID, us []meta.NumberUpdate, outcomes map[string]int) error {
	if s.NumberHealths == nil {
		return nil
	}
	for _, u := range us {
		n, err := s.NumberHealths.ApplyUpdate(c.UserContext(), tenantID, verified, app.NumberUpdate{
			WABAID: u.WABAID, Field: u.Field, DisplayPhoneNumber: u.DisplayPhoneNumber, Event: u.Event,
			Tier: u.Tier, Detail: u.Detail, At: u.At,
		})
		switch {
		case err != nil:
			return err
		case n > 0:
			outcomes["number_update"] += n
		default:
			outcomes["number_update_ignored"]++
		}
	}
	return nil
}
