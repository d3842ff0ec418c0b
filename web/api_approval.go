package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// Recipients previewed per approval: a list shows the first few of each
// event, one approval all but the largest audiences.
const (
	approvalListRecipients = 5
	approvalOneRecipients  = 100
)

// approvalJSON is an event awaiting approval with what it would send,
// planned exactly as routing plans it (the console's approval preview).
type approvalJSON struct {
	Notification scheduledJSON `json:"notification"`
	// Chain is true when the channels form a fallback chain: only the first
	// usable one is sent.
	Chain bool `json:"fallback_chain"`
	// Routed is true once the event was approved and routed: the messages
	// are then the stored ones.
	Routed           bool                `json:"routed"`
	Recipients       []recipientPlanJSON `json:"recipients"`
	HiddenRecipients int                 `json:"hidden_recipients"`
	// SubmittedByThisKey is true when the asking key submitted the event:
	// it may not decide it (separation of duties).
	SubmittedByThisKey bool `json:"submitted_by_this_key"`
	// Estimate is what the notification would cost by the price table,
	// over all its recipients; absent once routed or without prices.
	Estimate *estimateJSON `json:"estimate,omitempty"`
}

// estimateJSON is an approval's estimated cost.
type estimateJSON struct {
	Currency string `json:"currency"`
	// Total is a decimal string, such as "23.40".
	Total string             `json:"total"`
	Text  string             `json:"text"`
	Lines []estimateLineJSON `json:"lines"`
	// Unpriced counts the messages no price priced.
	Unpriced int `json:"unpriced"`
}

// estimateLineJSON is one kind of message of an estimate.
type estimateLineJSON struct {
	Channel  string `json:"channel"`
	Category string `json:"category,omitempty"`
	SMSParts int    `json:"sms_parts,omitempty"`
	Count    int    `json:"count"`
	Cost     string `json:"cost"`
}

func estimateOut(e *app.Estimate) *estimateJSON {
	if e == nil {
		return nil
	}
	out := &estimateJSON{Currency: e.Currency, Total: e.Total.String(), Text: e.String(), Unpriced: e.Unpriced, Lines: []estimateLineJSON{}}
	for _, l := range e.Lines {
		out.Lines = append(out.Lines, estimateLineJSON{Channel: string(l.Kind.Channel), Category: l.Kind.Category, SMSParts: l.Kind.Parts,
			Count: l.Count, Cost: l.Cost.String()})
	}
	return out
}

// recipientPlanJSON is what one recipient would receive.
type recipientPlanJSON struct {
	Name string `json:"name"`
	// Known is true when the recipient matches a stored contact.
	Known    bool          `json:"known"`
	Messages []plannedJSON `json:"messages"`
	// Nothing is the reason nothing can be sent to the recipient, if so.
	Nothing string `json:"nothing,omitempty"`
}

// plannedJSON is one message of a preview.
type plannedJSON struct {
	Channel string `json:"channel"`
	// Role is send, fallback, skipped, duplicate or stored.
	Role    string `json:"role"`
	Skip    string `json:"skip,omitempty"`
	To      string `json:"to,omitempty"`
	Locale  string `json:"locale,omitempty"`
	Subject string `json:"subject,omitempty"`
	Body    string `json:"body,omitempty"`
	Status  string `json:"status,omitempty"`
}

func approvalOut(p *console.ApprovalPreview, key *app.APIKey) approvalJSON {
	out := approvalJSON{Notification: scheduledOut(p.Event), Chain: p.Chain, Routed: p.Stored, HiddenRecipients: p.Hidden,
		Recipients:         make([]recipientPlanJSON, len(p.Recipients)),
		SubmittedByThisKey: app.SubmittedBy(&p.Event.Event, key.Actor()), Estimate: estimateOut(p.Estimate)}
	for i, r := range p.Recipients {
		rp := recipientPlanJSON{Name: r.Name, Known: r.Known, Nothing: r.Nothing, Messages: make([]plannedJSON, len(r.Messages))}
		for j, m := range r.Messages {
			rp.Messages[j] = plannedJSON{Channel: string(m.Channel), Role: m.Role, Skip: m.Skip, To: m.To, Locale: m.Locale,
				Subject: m.Subject, Body: m.Body, Status: m.Status}
		}
		out.Recipients[i] = rp
	}
	return out
}

// handleAPIApprovalList lists the tenant's notifications awaiting
// approval, newest first, each with what it would send to its first
// recipients. POST /api/v1/notifications/{id}/approve and /reject decide
// them.
func (s *Server) handleAPIApprovalList(c *fiber.Ctx) error {
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	rows, more, err := s.Schedules.Pending(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, req, approvalListRecipients)
	if err != nil {
		return err
	}
	out := make([]approvalJSON, len(rows))
	for i, p := range rows {
		out[i] = approvalOut(p, apiKeyOf(c))
	}
	return c.JSON(fiber.Map{"approvals": out, "page": pageInfo(req, len(rows), more)})
}

// handleAPIApprovalGet returns one notification with what it sends (or,
// once routed, sent), for its first recipients.
func (s *Server) handleAPIApprovalGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := s.Schedules.Preview(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, approvalOneRecipients)
	if err != nil {
		return err
	}
	return c.JSON(approvalOut(p, apiKeyOf(c)))
}
