package meta

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/app/provider"
)

// ConfigWABAID is the Config key of the WhatsApp Business Account's id,
// which owns the message templates.
const ConfigWABAID = "waba_id"

// maxTemplatePages bounds a template listing: 100 templates a page, and a
// WABA holds at most a few thousand.
const maxTemplatePages = 100

var _ provider.TemplateCatalog = (*Provider)(nil)

// templateList is the body of GET /{waba_id}/message_templates.
type templateList struct {
	Data []struct {
		ID             string `json:"id"`
		Name           string `json:"name"`
		Language       string `json:"language"`
		Status         string `json:"status"`
		Category       string `json:"category"`
		RejectedReason string `json:"rejected_reason"`
		Components     []struct {
			Type   string `json:"type"`
			Format string `json:"format"`
			Text   string `json:"text"`
		} `json:"components"`
	} `json:"data"`
	Paging struct {
		Cursors struct {
			After string `json:"after"`
		} `json:"cursors"`
		Next string `json:"next"`
	} `json:"paging"`
}

// ListTemplates implements provider.TemplateCatalog: every message template
// of the account's WABA with its review status, following Meta's cursor
// pages. Errors are *provider.Error, classified like send errors.
func (p *Provider) ListTemplates(ctx context.Context, a provider.Account) ([]provider.MessageTemplate, error) {
	waba, token, err := wabaCredentials(a)
	if err != nil {
		return nil, err
	}
	q := url.Values{"fields": {"id,name,language,status,category,rejected_reason,components"}, "limit": {"100"}}
	var out []provider.MessageTemplate
	for page := 0; page < maxTemplatePages; page++ {
		raw, err := p.graph(ctx, http.MethodGet, "/"+url.PathEscape(waba)+"/message_templates?"+q.Encode(), token, nil)
		if err != nil {
			return nil, err
		}
		var list templateList
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, &provider.Error{Code: "bad_response", Class: provider.Transient, Reason: "Meta's template list did not parse: " + excerpt(raw)}
		}
		for _, d := range list.Data {
			t := provider.MessageTemplate{ID: d.ID, Name: d.Name, Language: d.Language, Status: d.Status,
				Category: d.Category, RejectedReason: d.RejectedReason}
			if t.RejectedReason == "NONE" {
				t.RejectedReason = ""
			}
			for _, c := range d.Components {
				switch {
				case strings.EqualFold(c.Type, "BODY"):
					t.Body = c.Text
				case strings.EqualFold(c.Type, "HEADER"):
					// Meta writes the header's format in capitals
					// (message_templates components: format TEXT, IMAGE,
					// VIDEO, DOCUMENT or LOCATION).
					t.HeaderFormat = strings.ToUpper(c.Format)
				}
			}
			out = append(out, t)
		}
		// Meta's "next" link names graph.facebook.com; the cursor is
		// followed against the configured base URL instead.
		if list.Paging.Next == "" || list.Paging.Cursors.After == "" {
			return out, nil
		}
		q.Set("after", list.Paging.Cursors.After)
	}
	return out, nil
}

// createTemplate is the body of POST /{waba_id}/message_templates.
type createTemplate struct {
	Name            string            `json:"name"`
	Language        string            `json:"language"`
	Category        string            `json:"category"`
	ParameterFormat string            `json:"parameter_format"`
	Components      []createComponent `json:"components"`
}

type createComponent struct {
	Type    string          `json:"type"`
	Format  string          `json:"format,omitempty"`
	Text    string          `json:"text,omitempty"`
	Example *createExamples `json:"example,omitempty"`
}

type createExamples struct {
	// BodyText holds one list of example values, one per parameter.
	BodyText [][]string `json:"body_text,omitempty"`
	// HeaderHandle holds the uploaded example file of a media header.
	HeaderHandle []string `json:"header_handle,omitempty"`
}

// SubmitTemplate implements provider.TemplateCatalog: it creates a
// positional-parameter template with one body component and example values
// (Meta requires them for every parameter), after a document or image
// header whose example file it uploads first, and returns Meta's id,
// status and category.
func (p *Provider) SubmitTemplate(ctx context.Context, a provider.Account, d provider.TemplateDraft) (provider.MessageTemplate, error) {
	waba, token, err := wabaCredentials(a)
	if err != nil {
		return provider.MessageTemplate{}, err
	}
	body := createComponent{Type: "BODY", Text: d.Body}
	if len(d.Examples) > 0 {
		examples := make([]string, len(d.Examples))
		for i, e := range d.Examples {
			examples[i] = parameterText(e)
		}
		body.Example = &createExamples{BodyText: [][]string{examples}}
	}
	components := []createComponent{body}
	if d.Header != "" {
		header, err := p.headerComponent(ctx, a, token, d)
		if err != nil {
			return provider.MessageTemplate{}, err
		}
		components = []createComponent{*header, body}
	}
	if d.ID != "" {
		return p.editTemplate(ctx, token, d, components)
	}
	req, err := json.Marshal(createTemplate{Name: d.Name, Language: d.Language, Category: d.Category,
		ParameterFormat: "positional", Components: components})
	if err != nil {
		return provider.MessageTemplate{}, &provider.Error{Code: "encode", Class: provider.Permanent, Reason: err.Error()}
	}
	raw, err := p.graph(ctx, http.MethodPost, "/"+url.PathEscape(waba)+"/message_templates", token, req)
	if err != nil {
		return provider.MessageTemplate{}, err
	}
	var created struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Category string `json:"category"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.ID == "" {
		return provider.MessageTemplate{}, &provider.Error{Code: "missing_template_id", Class: provider.Transient,
			Reason: "Meta answered without a template id: " + excerpt(raw)}
	}
	if created.Category == "" {
		created.Category = d.Category
	}
	return provider.MessageTemplate{ID: created.ID, Name: d.Name, Language: d.Language, Status: created.Status,
		Category: created.Category, Body: d.Body, HeaderFormat: strings.ToUpper(d.Header)}, nil
}

// editTemplate replaces an existing template's category and body
// (POST /{template_id}); Meta reviews it again, so it is PENDING until the
// review's webhook or the next sync says otherwise. Name and language
// cannot change.
func (p *Provider) editTemplate(ctx context.Context, token string, d provider.TemplateDraft, components []createComponent) (provider.MessageTemplate, error) {
	req, err := json.Marshal(struct {
		Category   string            `json:"category"`
		Components []createComponent `json:"components"`
	}{d.Category, components})
	if err != nil {
		return provider.MessageTemplate{}, &provider.Error{Code: "encode", Class: provider.Permanent, Reason: err.Error()}
	}
	raw, err := p.graph(ctx, http.MethodPost, "/"+url.PathEscape(d.ID), token, req)
	if err != nil {
		return provider.MessageTemplate{}, err
	}
	var ok struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(raw, &ok); err != nil || !ok.Success {
		return provider.MessageTemplate{}, &provider.Error{Code: "edit_not_confirmed", Class: provider.Transient,
			Reason: "Meta did not confirm the edit: " + excerpt(raw)}
	}
	return provider.MessageTemplate{ID: d.ID, Name: d.Name, Language: d.Language, Status: "PENDING", Category: d.Category,
		Body: d.Body, HeaderFormat: strings.ToUpper(d.Header)}, nil
}

// wabaCredentials reads what the template endpoints need from the account.
func wabaCredentials(a provider.Account) (waba, token string, err error) {
	waba = strings.TrimSpace(a.Config[ConfigWABAID])
	if waba == "" {
		return "", "", &provider.Error{Code: "missing_waba_id", Class: provider.Permanent, Account: true,
			Reason: "The WhatsApp account has no waba_id configured."}
	}
	token = strings.TrimSpace(a.Secrets[SecretAccessToken])
	if token == "" {
		return "", "", &provider.Error{Code: "missing_access_token", Class: provider.Permanent, Account: true,
			Reason: "The WhatsApp account has no access_token secret."}
	}
	return waba, token, nil
}

// SubscribeApp registers the app whose token the account holds on the
// account's WhatsApp Business Account (POST /{waba_id}/subscribed_apps),
// so that Meta posts the WABA's webhooks (statuses, replies, template
// reviews, quality and account updates) to the app's callback URL. Meta
// answers {"success": true}; anything else is a classified
// *provider.Error.
func (p *Provider) SubscribeApp(ctx context.Context, a provider.Account) error {
	waba, token, err := wabaCredentials(a)
	if err != nil {
		return err
	}
	raw, err := p.graph(ctx, http.MethodPost, "/"+url.PathEscape(waba)+"/subscribed_apps", token, nil)
	if err != nil {
		return err
	}
	var answer struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || !answer.Success {
		return &provider.Error{Code: "subscription_not_confirmed", Class: provider.Permanent, Account: true,
			Reason: "Meta did not confirm the subscription: " + excerpt(raw)}
	}
	return nil
}
