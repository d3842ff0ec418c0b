package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/app/provider/sandbox"
	"github.com/heraldhq/herald/views"
)

// Channel-account pages: list, per-provider create and edit forms with
// write-only secrets, activation, suspension, the signing secret shown once,
// and test messages sent on the dispatch path.

// accountID reads the :id of a channel-account route; anything but a uuid
// is an unknown account.
func accountID(c *fiber.Ctx, param string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params(param))
	if err != nil {
		return uuid.Nil, fiber.ErrNotFound
	}
	return id, nil
}

// handleChannelList lists the tenant's channel accounts.
func (s *Server) handleChannelList(c *fiber.Ctx) error {
	page, req := pageOf(c)
	var f console.AccountFilter
	if ch, ok := app.ParseChannel(c.Query("channel")); ok {
		f.Channel = ch
	}
	switch st := strings.ToUpper(c.Query("status")); st {
	case app.AccountActive, app.AccountPending, app.AccountSuspended, app.AccountDisabled:
		f.Status = st
	}
	rows, more, err := s.Accounts.List(c.UserContext(), tenantOf(c).ID, f, req)
	if err != nil {
		return err
	}
	return s.render(c, views.ChannelListPage(s.page(c, "Channel accounts"), views.ChannelListProps{
		Rows: rows, Channel: string(f.Channel), Status: f.Status, Pager: pagerOf(c, page, len(rows), more),
	}))
}

// handleChannelNew shows the provider choice, or the chosen provider's form.
func (s *Server) handleChannelNew(c *fiber.Ctx) error {
	name := c.Query("provider")
	spec, ok := console.ProviderSpecOf(name)
	if !ok {
		var errs views.FormErrors
		if name != "" {
			c.Status(fiber.StatusNotFound)
			errs = views.FormErrors{"": "Herald has no provider called " + name + ". Choose one of these."}
		}
		return s.render(c, views.ChannelProviderPage(s.page(c, "Add a channel account"), errs))
	}
	props := views.ChannelFormProps{Spec: spec, Values: map[string]string{}, Operator: userOf(c).Role == app.RoleOperator}
	for _, f := range spec.Fields {
		if len(f.Options) > 0 && f.Required {
			props.Values[f.Key] = f.Options[0].Value
		}
	}
	return s.render(c, views.ChannelFormPage(s.page(c, "Add "+spec.Label+" account"), props))
}

// accountForm reads a create or edit form for the provider's fields.
func accountForm(c *fiber.Ctx, spec *console.ProviderSpec) console.AccountForm {
	f := console.AccountForm{
		Provider: spec.Name, Channel: c.FormValue("channel"), Name: c.FormValue("name"),
		Credentials: c.FormValue("credentials"),
		Config:      map[string]string{}, Secrets: map[string]string{}, Clear: map[string]bool{},
	}
	for _, fd := range spec.Fields {
		if fd.Secret {
			f.Secrets[fd.Key] = c.FormValue("secret_" + fd.Key)
			f.Clear[fd.Key] = c.FormValue("clear_"+fd.Key) != ""
		} else {
			f.Config[fd.Key] = c.FormValue("config_" + fd.Key)
		}
	}
	return f
}

// formAgain re-shows a form after bad input: the settings as typed, never
// the secrets.
func (s *Server) formAgain(c *fiber.Ctx, title string, spec *console.ProviderSpec, d *console.AccountDetail, f console.AccountForm, err error) error {
	status := fiber.StatusUnprocessableEntity
	if app.ErrorCode(err) == app.ECONFLICT {
		status = fiber.StatusConflict
	}
	c.Status(status)
	return s.render(c, views.ChannelFormPage(s.page(c, title), views.ChannelFormProps{
		Spec: spec, Account: d, Name: f.Name, Channel: f.Channel, Values: f.Config, Credentials: f.Credentials,
		Operator: userOf(c).Role == app.RoleOperator, Errs: views.FormErrorsOf(err),
	}))
}

// handleChannelCreate stores a new account. A webhook account's signing
// secret is shown on the answer to this request and never again.
func (s *Server) handleChannelCreate(c *fiber.Ctx) error {
	spec, ok := console.ProviderSpecOf(c.FormValue("provider"))
	if !ok {
		c.Status(fiber.StatusUnprocessableEntity)
		return s.render(c, views.ChannelProviderPage(s.page(c, "Add a channel account"),
			views.FormErrors{"": "Choose the provider of the new account."}))
	}
	f := accountForm(c, spec)
	a, secret, err := s.Accounts.Create(c.UserContext(), userOf(c), tenantOf(c).ID, f)
	switch code := app.ErrorCode(err); {
	case code == app.EINVALID || code == app.ECONFLICT:
		return s.formAgain(c, "Add "+spec.Label+" account", spec, nil, f, err)
	case err != nil:
		return err
	}
	if secret != "" {
		return s.render(c, views.ChannelSecretPage(s.page(c, "Account created"), views.ChannelSecretProps{Account: a, Secret: secret}))
	}
	s.flash(c, "success", a.Name+" was created. Activate it when it is ready to send.")
	return c.Redirect(tenantPath(c, "/channels/"+a.ID.String()), fiber.StatusSeeOther)
}

// sandboxAddresses documents the sandbox's special addresses.
func sandboxAddresses() []views.SandboxAddress {
	out := make([]views.SandboxAddress, len(sandbox.Addresses))
	for i, a := range sandbox.Addresses {
		out[i] = views.SandboxAddress{Phone: a.Phone, Email: a.Email, Behaviour: string(a.Behaviour), Meaning: a.Meaning}
	}
	return out
}

// detailProps builds the account page.
func (s *Server) detailProps(c *fiber.Ctx, d *console.AccountDetail) views.ChannelDetailProps {
	base := strings.TrimSuffix(s.Config.BaseURL.String(), "/")
	return views.ChannelDetailProps{
		D: d, Sandbox: sandboxAddresses(), GraphVersion: meta.DefaultVersion,
		Hooks: views.ChannelHooks{
			Meta: base + "/webhooks/meta/a/" + d.WebhookToken,
			SES:  base + "/webhooks/ses",
			SMS:  base + "/webhooks/sns-sms",
		},
	}
}

// handleChannelDetail shows an account.
func (s *Server) handleChannelDetail(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	d, err := s.Accounts.Get(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.ChannelDetailPage(s.page(c, d.Name), s.detailProps(c, d)))
}

// editProps fills the edit form from the stored account.
func editProps(c *fiber.Ctx, d *console.AccountDetail) views.ChannelFormProps {
	props := views.ChannelFormProps{Spec: d.Spec, Account: d, Name: d.Name, Values: map[string]string{},
		Operator: userOf(c).Role == app.RoleOperator, Credentials: console.CredentialsKeys}
	for _, f := range d.Spec.Fields {
		if !f.Secret {
			props.Values[f.Key] = d.Config[f.Key]
		}
	}
	if d.DefaultCredentials {
		props.Credentials = console.CredentialsDefault
	}
	return props
}

// handleChannelEdit shows an account's edit form.
func (s *Server) handleChannelEdit(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	d, err := s.Accounts.Get(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	if d.Spec == nil {
		return app.Errorf(app.ENOTFOUND, "This account cannot be edited here.")
	}
	return s.render(c, views.ChannelFormPage(s.page(c, "Edit "+d.Name), editProps(c, d)))
}

// handleChannelUpdate saves an account's edit form.
func (s *Server) handleChannelUpdate(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	tenantID := tenantOf(c).ID
	d, err := s.Accounts.Get(c.UserContext(), tenantID, id)
	if err != nil {
		return err
	}
	if d.Spec == nil {
		return app.Errorf(app.ENOTFOUND, "This account cannot be edited here.")
	}
	f := accountForm(c, d.Spec)
	err = s.Accounts.Update(c.UserContext(), userOf(c), tenantID, id, f)
	switch code := app.ErrorCode(err); {
	case code == app.EINVALID || code == app.ECONFLICT:
		return s.formAgain(c, "Edit "+d.Name, d.Spec, d, f, err)
	case err != nil:
		return err
	}
	s.flash(c, "success", "Changes to "+strings.TrimSpace(f.Name)+" were saved.")
	return c.Redirect(tenantPath(c, "/channels/"+id.String()), fiber.StatusSeeOther)
}

// handleChannelActivate makes an account the channel's active one; with
// replace set it suspends the channel's current active account.
func (s *Server) handleChannelActivate(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	err = s.Accounts.Activate(c.UserContext(), userOf(c), tenantOf(c).ID, id, c.FormValue("replace") == "1")
	back := tenantPath(c, "/channels/"+id.String())
	switch {
	case app.ErrorCode(err) == app.ECONFLICT:
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(back, fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	s.flash(c, "success", "The account is active: messages on its channel go out through it now.")
	return c.Redirect(back, fiber.StatusSeeOther)
}

// handleChannelSuspend suspends an account with a reason.
func (s *Server) handleChannelSuspend(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	tenantID, reason := tenantOf(c).ID, c.FormValue("reason")
	err = s.Accounts.Suspend(c.UserContext(), userOf(c), tenantID, id, reason)
	switch code := app.ErrorCode(err); {
	case code == app.EINVALID:
		d, gerr := s.Accounts.Get(c.UserContext(), tenantID, id)
		if gerr != nil {
			return gerr
		}
		props := s.detailProps(c, d)
		props.Errs, props.Reason = views.FormErrorsOf(err), reason
		c.Status(fiber.StatusUnprocessableEntity)
		return s.render(c, views.ChannelDetailPage(s.page(c, d.Name), props))
	case code == app.ECONFLICT:
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/channels/"+id.String()), fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	s.flash(c, "success", "The account is suspended. Messages on its channel fail or fall back until an account is active.")
	return c.Redirect(tenantPath(c, "/channels/"+id.String()), fiber.StatusSeeOther)
}

// handleChannelRotate gives a webhook account a new signing secret and
// shows it once.
func (s *Server) handleChannelRotate(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	tenantID := tenantOf(c).ID
	secret, err := s.Accounts.RotateSigningSecret(c.UserContext(), userOf(c), tenantID, id)
	if app.ErrorCode(err) == app.ECONFLICT {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/channels/"+id.String()), fiber.StatusSeeOther)
	} else if err != nil {
		return err
	}
	d, err := s.Accounts.Get(c.UserContext(), tenantID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.ChannelSecretPage(s.page(c, "New signing secret"),
		views.ChannelSecretProps{Account: d.ChannelAccount, Secret: secret, Rotated: true}))
}

// handleChannelTestForm shows the test-message form.
func (s *Server) handleChannelTestForm(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	d, err := s.Accounts.Get(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.ChannelTestPage(s.page(c, "Send a test message"),
		views.ChannelTestProps{Account: d.ChannelAccount, Sandbox: sandboxAddresses()}))
}

// handleChannelTest queues a test message and follows it.
func (s *Server) handleChannelTest(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	tenantID, to := tenantOf(c).ID, c.FormValue("to")
	m, err := s.Accounts.SendTest(c.UserContext(), userOf(c), tenantID, id, to)
	switch code := app.ErrorCode(err); {
	case code == app.EINVALID || code == app.ECONFLICT:
		d, gerr := s.Accounts.Get(c.UserContext(), tenantID, id)
		if gerr != nil {
			return gerr
		}
		c.Status(fiber.StatusUnprocessableEntity)
		if code == app.ECONFLICT {
			c.Status(fiber.StatusConflict)
		}
		return s.render(c, views.ChannelTestPage(s.page(c, "Send a test message"), views.ChannelTestProps{
			Account: d.ChannelAccount, To: to, Errs: views.FormErrorsOf(err), Sandbox: sandboxAddresses(),
		}))
	case err != nil:
		return err
	}
	s.flash(c, "success", "The test message is queued.")
	return c.Redirect(tenantPath(c, "/channels/"+id.String()+"/test/"+m.ID.String()), fiber.StatusSeeOther)
}

// handleChannelTestResult shows a test message's status and timeline; the
// page refreshes it until the message settles.
func (s *Server) handleChannelTestResult(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	messageID, err := accountID(c, "message")
	if err != nil {
		return err
	}
	tenantID := tenantOf(c).ID
	d, err := s.Accounts.Get(c.UserContext(), tenantID, id)
	if err != nil {
		return err
	}
	m, err := s.Accounts.TestMessage(c.UserContext(), tenantID, id, messageID)
	if err != nil {
		return err
	}
	return s.render(c, views.ChannelTestResultPage(s.page(c, "Test message"),
		views.ChannelTestProps{Account: d.ChannelAccount, Result: m}))
}
