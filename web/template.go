package web

import (
	"cmp"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// templateFilterOf reads the template list's filters from the query string.
// Values the list does not know are dropped rather than refused: a filter
// link from an old bookmark still opens the list.
func (s *Server) templateFilterOf(c *fiber.Ctx) (views.TemplateFilter, console.TemplateFilter) {
	var v views.TemplateFilter
	var f console.TemplateFilter
	if def, ok, _ := s.Events.Known(c.UserContext(), tenantOf(c).ID, strings.TrimSpace(c.Query("event"))); ok {
		v.Event, f.Event = def.Name, def.Name
	}
	if ch, ok := app.ParseChannel(strings.TrimSpace(c.Query("channel"))); ok {
		v.Channel, f.Channel = string(ch), ch
	}
	if loc := strings.TrimSpace(c.Query("locale")); loc != "" {
		if norm, err := app.NormalizeLocale(loc); err == nil {
			v.Locale, f.Locale = norm, norm
		}
	}
	switch c.Query("state") {
	case "active":
		v.State, f.Active = "active", new(true)
	case "inactive":
		v.State, f.Active = "inactive", new(false)
	}
	return v, f
}

// handleTemplateList lists the tenant's templates, filtered, by event, channel and locale.
func (s *Server) handleTemplateList(c *fiber.Ctx) error {
	ctx, u, t := c.UserContext(), userOf(c), tenantOf(c)
	vf, f := s.templateFilterOf(c)
	page, req := pageOf(c)
	rows, more, err := s.Templates.List(ctx, u, t.ID, f, req)
	if err != nil {
		return err
	}
	locales, err := s.Templates.Locales(ctx, u, t.ID)
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	stats, err := s.Trends.TemplateStats(ctx, u, t, ids)
	if err != nil {
		return err
	}
	return s.render(c, views.TemplatesPage(s.page(c, "Templates"), views.TemplateList{
		Rows: rows, Filter: vf, Events: s.tenantEvents(c), Locales: locales,
		Pager: pagerOf(c, page, len(rows), more), Base: tenantPath(c, "/templates"), Stats: stats,
	}))
}

// templateFormOf reads the editor's content fields. Browsers send CRLF
// line endings; templates keep LF, like the provisioned ones.
func templateFormOf(c *fiber.Ctx) app.TemplateInput {
	crlf := strings.NewReplacer("\r\n", "\n")
	in := app.TemplateInput{Subject: strings.TrimSpace(c.FormValue("subject")), Body: crlf.Replace(c.FormValue("body")),
		BodyFormat: app.BodyFormat(strings.TrimSpace(c.FormValue("body_format")))}
	if ch := strings.TrimSpace(c.FormValue("channel")); ch != "" && ch != string(app.Email) {
		// The new-template form shows the format field for every channel,
		// marked "E-mail only"; on another channel it means nothing.
		in.BodyFormat = ""
	}
	name, lang := strings.TrimSpace(c.FormValue("wa_name")), strings.TrimSpace(c.FormValue("wa_language"))
	params := parameterList(c.FormValue("wa_parameters"))
	header := strings.TrimSpace(c.FormValue("wa_header"))
	if name != "" || lang != "" || len(params) > 0 {
		in.WhatsAppTemplate = &app.WhatsAppTemplateSpec{Name: name, Language: lang, Parameters: params, Header: header}
	}
	return in
}

// parameterList splits the Meta parameter field: names separated by commas
// or white space, with or without braces.
func parameterList(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		f = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(f, "{{"), "}}"))
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// tenantEvents is the request's tenant's registry, built-in events and
// its own; the built-in ones alone when the tenant's cannot be read, so a
// page still opens.
func (s *Server) tenantEvents(c *fiber.Ctx) []app.EventDef {
	evs, err := s.Events.Events(c.UserContext(), tenantOf(c).ID)
	if err != nil {
		return app.Events()
	}
	return evs
}

// editorOf fills the editor page from a template (nil for a new one) and
// the content typed.
func (s *Server) editorOf(c *fiber.Ctx, t *app.Template, event, channel, locale string, in app.TemplateInput, errs views.FormErrors) views.TemplateEditor {
	allowEmailPreview(c)
	e := views.TemplateEditor{
		Template: t, Base: tenantPath(c, "/templates"), Events: s.tenantEvents(c),
		Event: event, Channel: channel, Locale: locale, Subject: in.Subject, Body: in.Body, BodyFormat: in.BodyFormat, Errors: errs,
		Locales: s.localeChoices(c),
	}
	if t != nil {
		e.Event, e.Channel, e.Locale, e.BaseVersion = t.TriggerEvent, string(t.Channel), t.Locale, t.Version
		if e.BodyFormat == "" {
			// A saved template shows its own format; a new one
			// preselects Markdown.
			e.BodyFormat = cmp.Or(t.BodyFormat, app.BodyHTML)
		}
	}
	if spec := in.WhatsAppTemplate; spec != nil {
		e.WAName, e.WALanguage, e.WAParameters, e.WAHeader = spec.Name, spec.Language, strings.Join(spec.Parameters, ", "), spec.Header
	}
	e.Channels = s.Templates.TemplateChannelsOf(c.UserContext(), tenantOf(c).ID, e.Event)
	if def, ok, _ := s.Events.Known(c.UserContext(), tenantOf(c).ID, e.Event); ok {
		e.Variables = console.TemplateVariables(def)
	}
	e.Preview = s.previewOf(c, e.Event, e.Channel, in, nil)
	if ch, ok := app.ParseChannel(e.Channel); ok {
		// The accounts a test may go through; a failure to list them
		// leaves the choice empty, which the form explains.
		e.TestAccounts, _ = s.Accounts.TestAccounts(c.UserContext(), tenantOf(c).ID, ch)
	}
	return e
}

// localeChoices suggests locales for a new template: the tenant's own and
// the provisioned ones.
func (s *Server) localeChoices(c *fiber.Ctx) []string {
	out := append([]string(nil), app.DefaultLocales...)
	have, err := s.Templates.Locales(c.UserContext(), userOf(c), tenantOf(c).ID)
	if err != nil {
		return out
	}
	for _, l := range have {
		if !strings.Contains(" "+strings.Join(out, " ")+" ", " "+l+" ") {
			out = append(out, l)
		}
	}
	return out
}

// previewOf renders the preview pane's content.
func (s *Server) previewOf(c *fiber.Ctx, event, channel string, in app.TemplateInput, samples map[string]string) *views.TemplatePreviewView {
	def, ok, _ := s.Events.Known(c.UserContext(), tenantOf(c).ID, event)
	if !ok {
		return &views.TemplatePreviewView{Hint: "Choose an event to see a preview."}
	}
	ch, ok := app.ParseChannel(channel)
	if !ok {
		return &views.TemplatePreviewView{Hint: "Choose a channel to see a preview."}
	}
	if strings.TrimSpace(in.Body) == "" && in.Subject == "" {
		return &views.TemplatePreviewView{Hint: "Write the body to see a preview."}
	}
	limit := app.DefaultMaxSMSParts
	if ch == app.SMS {
		// The preview refuses what saving would; a failure to read the
		// limit shows the default rather than no preview.
		if l, err := s.Templates.SMSPartsLimit(c.UserContext(), userOf(c), tenantOf(c).ID); err == nil {
			limit = l
		}
	}
	var frame *app.EmailFrame
	if ch == app.Email {
		frame = s.emailFrame(c)
	}
	return &views.TemplatePreviewView{Preview: console.PreviewTemplate(def, ch, in, samples, limit, frame)}
}

// handleTemplateNew shows the editor for a new template; ?event=, ?channel=
// and ?locale= preselect its key (the event choice reloads the channels
// through this page).
func (s *Server) handleTemplateNew(c *fiber.Ctx) error {
	event, channel, locale := c.Query("event"), c.Query("channel"), c.Query("locale")
	if _, ok, _ := s.Events.Known(c.UserContext(), tenantOf(c).ID, event); !ok {
		event = ""
	}
	if c.Get("HX-Request") != "" {
		// The preview listens for this to render for the new event.
		c.Set("HX-Trigger", "template-event-changed")
	}
	return s.render(c, views.TemplateEditorPage(s.page(c, "New template"), s.editorOf(c, nil, event, channel, locale, app.TemplateInput{}, nil)))
}

// handleTemplateCreate stores a new template, or shows the form again with
// what is wrong.
func (s *Server) handleTemplateCreate(c *fiber.Ctx) error {
	in := console.NewTemplateInput{
		Event: c.FormValue("event"), Channel: c.FormValue("channel"), Locale: c.FormValue("locale"),
		TemplateInput: templateFormOf(c), OverrideDefault: true,
	}
	t, warnings, err := s.Templates.Create(c.UserContext(), userOf(c), tenantOf(c).ID, in)
	if code := app.ErrorCode(err); code == app.EINVALID || code == app.ECONFLICT {
		c.Status(fiber.StatusUnprocessableEntity)
		e := s.editorOf(c, nil, in.Event, in.Channel, in.Locale, in.TemplateInput, views.FormErrorsOf(err))
		if exists := (*console.TemplateExistsError)(nil); errors.As(err, &exists) {
			e.Existing = exists.Existing
		}
		return s.render(c, views.TemplateEditorPage(s.page(c, "New template"), e))
	}
	if err != nil {
		return err
	}
	if t.Version > 1 {
		// The key held Herald's default text: the tenant's own replaced it.
		s.flashSaved(c, "Your text replaces Herald's default for "+views.TemplateName(t)+"; the default is kept in the history.", warnings)
		return c.Redirect(tenantPath(c, "/templates/"+t.ID.String()), fiber.StatusSeeOther)
	}
	s.flashSaved(c, "Template created as version 1 and active.", warnings)
	return c.Redirect(tenantPath(c, "/templates/"+t.ID.String()), fiber.StatusSeeOther)
}

// flashSaved reports a save, with a warning about placeholders the event
// does not provide: saving works, but they render empty.
func (s *Server) flashSaved(c *fiber.Ctx, msg string, unknown []string) {
	if len(unknown) == 0 {
		s.flash(c, "success", msg)
		return
	}
	names := make([]string, len(unknown))
	for i, n := range unknown {
		names[i] = "{{" + n + "}}"
	}
	s.flash(c, "warning", msg+" Unknown placeholders: "+strings.Join(names, ", ")+". This event does not provide them, so they render empty.")
}

// templateOf loads the template named in the path; a malformed or foreign
// id is not found.
func (s *Server) templateOf(c *fiber.Ctx) (*app.Template, error) {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return nil, fiber.ErrNotFound
	}
	return s.Templates.Get(c.UserContext(), userOf(c), tenantOf(c).ID, id)
}

// handleTemplateEdit shows the editor of one template.
func (s *Server) handleTemplateEdit(c *fiber.Ctx) error {
	t, err := s.templateOf(c)
	if err != nil {
		return err
	}
	in := app.TemplateInput{Subject: t.Subject, Body: t.Body, BodyFormat: t.BodyFormat}
	if in.WhatsAppTemplate, err = t.Spec(); err != nil {
		return err
	}
	e := s.editorOf(c, t, "", "", "", in, nil)
	if e.MetaStatus, err = s.MetaTemplateConsole.StatusOf(c.UserContext(), tenantOf(c).ID, in.WhatsAppTemplate); err != nil {
		return err
	}
	stats, err := s.Trends.TemplateStats(c.UserContext(), userOf(c), tenantOf(c), []uuid.UUID{t.ID})
	if err != nil {
		return err
	}
	e.Stats = stats[t.ID]
	e.MessagesHref = tenantPath(c, "/messages?"+url.Values{"event": {t.TriggerEvent}, "channel": {string(t.Channel)}}.Encode())
	return s.render(c, views.TemplateEditorPage(s.page(c, templateTitle(t)), e))
}

// handleTemplateUpdate saves a template as a new version.
func (s *Server) handleTemplateUpdate(c *fiber.Ctx) error {
	t, err := s.templateOf(c)
	if err != nil {
		return err
	}
	in := templateFormOf(c)
	base, _ := strconv.Atoi(c.FormValue("version"))
	saved, warnings, err := s.Templates.Edit(c.UserContext(), userOf(c), tenantOf(c).ID, t.ID, base, in)
	if code := app.ErrorCode(err); code == app.EINVALID || code == app.ECONFLICT {
		c.Status(fiber.StatusUnprocessableEntity)
		if code == app.ECONFLICT {
			c.Status(fiber.StatusConflict)
		}
		e := s.editorOf(c, t, "", "", "", in, views.FormErrorsOf(err))
		// Keep the version the editor started from, so saving again after
		// a conflict still needs a reload.
		if base != 0 {
			e.BaseVersion = base
		}
		return s.render(c, views.TemplateEditorPage(s.page(c, templateTitle(t)), e))
	}
	if err != nil {
		return err
	}
	s.flashSaved(c, "Saved as version "+strconv.Itoa(saved.Version)+"; version "+strconv.Itoa(saved.Version-1)+" is kept in the history.", warnings)
	return c.Redirect(tenantPath(c, "/templates/"+t.ID.String()), fiber.StatusSeeOther)
}

// samplesOf reads the editor's sample values (sample.<variable>).
func samplesOf(c *fiber.Ctx) map[string]string {
	samples := map[string]string{}
	c.Request().PostArgs().VisitAll(func(k, v []byte) {
		if name, ok := strings.CutPrefix(string(k), "sample."); ok {
			samples[name] = string(v)
		}
	})
	return samples
}

// handleTemplateTest sends the content in the editor, saved or not, as a
// test message to the address typed, through the account chosen, and
// shows the editor again with the test's result following the message.
func (s *Server) handleTemplateTest(c *fiber.Ctx) error {
	ctx, u, tenantID := c.UserContext(), userOf(c), tenantOf(c).ID
	var t *app.Template
	if raw := strings.TrimSpace(c.FormValue("template_id")); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return fiber.ErrNotFound
		}
		if t, err = s.Templates.Get(ctx, u, tenantID, id); err != nil {
			return err
		}
	}
	in := console.TemplateTestInput{
		Template: t, Event: c.FormValue("event"), Channel: c.FormValue("channel"), Locale: c.FormValue("locale"),
		Content: templateFormOf(c), AccountID: c.FormValue("test_account"), To: c.FormValue("test_to"), Samples: samplesOf(c),
	}
	m, err := s.Accounts.SendTemplateTest(ctx, u, tenantID, in)
	code := app.ErrorCode(err)
	if err != nil && code != app.EINVALID && code != app.ECONFLICT {
		return err
	}
	e := s.editorOf(c, t, in.Event, in.Channel, in.Locale, in.Content, views.FormErrorsOf(err))
	if base, _ := strconv.Atoi(c.FormValue("version")); t != nil && base != 0 {
		e.BaseVersion = base
	}
	e.TestTo, e.TestAccount = in.To, in.AccountID
	e.Variables = withSamples(e.Variables, in.Samples)
	e.Preview = s.previewOf(c, e.Event, e.Channel, in.Content, in.Samples)
	switch code {
	case app.EINVALID:
		c.Status(fiber.StatusUnprocessableEntity)
	case app.ECONFLICT:
		c.Status(fiber.StatusTooManyRequests)
	default:
		if e.TestResult, err = s.MessageConsole.TestMessage(ctx, u, tenantID, m.ID); err != nil {
			return err
		}
	}
	title := "New template"
	if t != nil {
		title = templateTitle(t)
	}
	return s.render(c, views.TemplateEditorPage(s.page(c, title), e))
}

// withSamples shows the sample values the editor sent in place of the
// event's.
func withSamples(vars []console.TemplateVariable, samples map[string]string) []console.TemplateVariable {
	out := append([]console.TemplateVariable(nil), vars...)
	for i, v := range out {
		if val, ok := samples[v.Name]; ok {
			out[i].Sample = val
		}
	}
	return out
}

// handleTemplateTestResult renders a test message's result (an htmx
// fragment the editor refreshes until the message settles).
func (s *Server) handleTemplateTestResult(c *fiber.Ctx) error {
	id, err := uuid.Parse(c.Params("message"))
	if err != nil {
		return fiber.ErrNotFound
	}
	d, err := s.MessageConsole.TestMessage(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.TemplateTestResult(s.page(c, "Test message"), tenantPath(c, "/templates"), d))
}

// templateTitle names a template as people do: event, channel, locale and
// version.
func templateTitle(t *app.Template) string {
	return views.TemplateName(t)
}

// handleTemplatePreview renders the editor's live preview (an htmx
// fragment): the content typed, with the event's sample values or the ones
// the editor tried.
func (s *Server) handleTemplatePreview(c *fiber.Ctx) error {
	return s.render(c, views.TemplatePreviewPane(s.previewOf(c, c.FormValue("event"), c.FormValue("channel"), templateFormOf(c), samplesOf(c))))
}

// versionOf reads the version number in the path; anything else is not
// found.
func versionOf(c *fiber.Ctx) (int, error) {
	v, err := strconv.Atoi(c.Params("version"))
	if err != nil || v < 1 {
		return 0, fiber.ErrNotFound
	}
	return v, nil
}

// handleTemplateHistory lists a template's versions.
func (s *Server) handleTemplateHistory(c *fiber.Ctx) error {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fiber.ErrNotFound
	}
	page, req := pageOf(c)
	t, versions, more, err := s.Templates.History(c.UserContext(), userOf(c), tenantOf(c).ID, id, req)
	if err != nil {
		return err
	}
	return s.render(c, views.TemplateHistoryPage(s.page(c, "History of "+templateTitle(t)), views.TemplateHistory{
		Template: t, Versions: versions, Pager: pagerOf(c, page, len(versions), more), Base: tenantPath(c, "/templates"),
	}))
}

// handleTemplateVersion shows an earlier version against the current one.
func (s *Server) handleTemplateVersion(c *fiber.Ctx) error {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fiber.ErrNotFound
	}
	version, err := versionOf(c)
	if err != nil {
		return err
	}
	cmp, err := s.Templates.Compare(c.UserContext(), userOf(c), tenantOf(c).ID, id, version)
	if err != nil {
		return err
	}
	return s.render(c, views.TemplateComparePage(s.page(c, "Version "+strconv.Itoa(version)+" of "+templateTitle(cmp.Template)),
		views.TemplateCompare{TemplateComparison: cmp, Base: tenantPath(c, "/templates")}))
}

// handleTemplateRestore makes an earlier version current again, as a new
// version.
func (s *Server) handleTemplateRestore(c *fiber.Ctx) error {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fiber.ErrNotFound
	}
	version, err := versionOf(c)
	if err != nil {
		return err
	}
	// The current version the page showed, so that a restore does not
	// land on top of a save the user has not seen.
	current, _ := strconv.Atoi(c.Query("current"))
	t, err := s.Templates.Restore(c.UserContext(), userOf(c), tenantOf(c).ID, id, version, current)
	if err != nil {
		return err
	}
	s.flash(c, "success", "Version "+strconv.Itoa(version)+" restored as version "+strconv.Itoa(t.Version)+".")
	return c.Redirect(tenantPath(c, "/templates/"+t.ID.String()), fiber.StatusSeeOther)
}

// handleTemplateDeactivate takes a template out of routing.
func (s *Server) handleTemplateDeactivate(c *fiber.Ctx) error {
	return s.setTemplateActive(c, false)
}

// handleTemplateReactivate puts a template back into routing.
func (s *Server) handleTemplateReactivate(c *fiber.Ctx) error {
	return s.setTemplateActive(c, true)
}

func (s *Server) setTemplateActive(c *fiber.Ctx, active bool) error {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fiber.ErrNotFound
	}
	t, err := s.Templates.SetActive(c.UserContext(), userOf(c), tenantOf(c).ID, id, active)
	if err != nil {
		return err
	}
	msg := "Template deactivated: routing now falls back along the locale chain for " + t.TriggerEvent + " on " + string(t.Channel) + "."
	if active {
		msg = "Template reactivated: routing uses it again."
	}
	s.flash(c, "success", msg)
	return c.Redirect(tenantPath(c, "/templates/"+t.ID.String()), fiber.StatusSeeOther)
}
