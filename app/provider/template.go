package provider

import "context"

// MessageTemplate is a message template as a provider reports it (Meta's
// WhatsApp message templates): what Herald syncs and shows.
type MessageTemplate struct {
	// ID is the provider's id of the template.
	ID       string
	Name     string
	Language string
	// Status is the review status: APPROVED, PENDING, REJECTED, PAUSED,
	// DISABLED, ...
	Status   string
	Category string
	// RejectedReason is why the template was rejected, if it was.
	RejectedReason string
	// Body is the text of the template's body component.
	Body string
	// HeaderFormat is the format of the template's header component
	// (TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION), "" without a header: a
	// DOCUMENT or IMAGE header carries a file when the template is sent.
	HeaderFormat string
}

// TemplateDraft is a template submitted for review: a body with numbered
// parameters and one example value for each.
type TemplateDraft struct {
	// ID, when set, is the provider's id of an existing template (one
	// that was rejected or paused): its content is edited and reviewed
	// again instead of a new template being created.
	ID       string
	Name     string
	Language string
	Category string
	Body     string
	Examples []string
	// Header, when set, is the format of the template's media header:
	// DOCUMENT or IMAGE. Meta's review needs an example file for it,
	// HeaderSample, which the provider uploads first.
	Header       string
	HeaderSample *File
}

// TemplateCatalog is implemented by providers that send only reviewed
// templates outside a conversation: Meta's WhatsApp Business Account.
type TemplateCatalog interface {
	// ListTemplates returns every template of the account.
	ListTemplates(ctx context.Context, a Account) ([]MessageTemplate, error)
	// SubmitTemplate creates a template for review and returns it as the
	// provider reports it (usually PENDING).
	SubmitTemplate(ctx context.Context, a Account, d TemplateDraft) (MessageTemplate, error)
}
