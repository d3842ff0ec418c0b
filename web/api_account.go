package web

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// accountJSON is a channel account as the API shows it. Secrets are
// write-only: the answer says whether the account has credentials, and
// which secrets are stored, never a value.
type accountJSON struct {
	ID              uuid.UUID   `json:"id"`
	Channel         app.Channel `json:"channel"`
	Provider        string      `json:"provider"`
	Name            string      `json:"name"`
	Status          string      `json:"status"`
	SuspendedReason *string     `json:"suspended_reason,omitempty"`
	// Config holds the settings that are not secret (region, sender,
	// endpoint URL, ...).
	Config app.Attrs `json:"config"`
	// CredentialsSet is true when the account stores secrets of its own.
	CredentialsSet bool `json:"credentials_set"`
	// SecretsSet names each secret the provider takes and whether one is
	// stored (one account's answer only).
	SecretsSet map[string]bool `json:"secrets_set,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	// SigningSecret is the signing secret Herald generated for a new
	// webhook account, in the answer that created it only: the one secret
	// the tenant did not choose and must copy into its endpoint.
	SigningSecret string `json:"signing_secret,omitempty"`
}

func accountOut(a *app.ChannelAccount) *accountJSON {
	config := app.Attrs{}
	for k, v := range a.Config {
		config[k] = v
	}
	return &accountJSON{
		ID: a.ID, Channel: a.Channel, Provider: a.Provider, Name: a.Name, Status: a.Status, SuspendedReason: a.SuspendedReason,
		Config: config, CredentialsSet: len(a.Secrets) > 0, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// accountDetailOut adds which secrets are stored to an account's answer.
func accountDetailOut(d *console.AccountDetail) *accountJSON {
	out := accountOut(d.ChannelAccount)
	out.SecretsSet = map[string]bool{}
	if d.Spec != nil {
		for _, f := range d.Spec.Fields {
			if f.Secret {
				out.SecretsSet[f.Key] = d.SecretsSet[f.Key]
			}
		}
	}
	if d.Spec != nil && d.Spec.SigningSecret {
		out.SecretsSet[console.KeyWebhookSigningSecret] = d.SecretsSet[console.KeyWebhookSigningSecret]
	}
	return out
}

// accountFieldNames maps the account form's field names to the API's:
// config_region is config.region, secret_access_token secrets.access_token.
func accountFieldNames(field string) string {
	if k, ok := strings.CutPrefix(field, "config_"); ok {
		return "config." + k
	}
	if k, ok := strings.CutPrefix(field, "secret_"); ok {
		return "secrets." + k
	}
	return field
}

// checkAccountKeys refuses settings and secrets the provider does not take:
// the console's form cannot send them, but an API caller can misspell one,
// and a setting silently dropped is worse than an error.
func checkAccountKeys(spec *console.ProviderSpec, config map[string]string, secrets map[string]string, clear []string) error {
	check := func(field, key string, secret bool) error {
		f, ok := spec.Field(key)
		if !ok || f.Secret != secret {
			what := "setting"
			if secret {
				what = "secret"
			}
			return app.Invalid("unknown_"+what, field+"."+key, "%s accounts have no %s %q.", spec.Name, what, key)
		}
		return nil
	}
	for _, k := range sortedKeys(config) {
		if err := check("config", k, false); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(secrets) {
		if err := check("secrets", k, true); err != nil {
			return err
		}
	}
	for i, k := range clear {
		if f, ok := spec.Field(k); !ok || !f.Secret {
			return app.Invalid("unknown_secret", fmt.Sprintf("clear_secrets[%d]", i), "%s accounts have no secret %q.", spec.Name, k)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// handleAPIAccountList lists the tenant's channel accounts, newest first:
// ?channel=, ?status=, ?limit=, ?offset=.
func (s *Server) handleAPIAccountList(c *fiber.Ctx) error {
	var f console.AccountFilter
	if v := strings.TrimSpace(c.Query("channel")); v != "" {
		ch, ok := app.ParseChannel(v)
		if !ok {
			return app.Invalid("unknown_channel", "channel", "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", v)
		}
		f.Channel = ch
	}
	switch v := strings.ToUpper(strings.TrimSpace(c.Query("status"))); v {
	case "":
	case app.AccountPending, app.AccountActive, app.AccountSuspended, app.AccountDisabled:
		f.Status = v
	default:
		return app.Invalid("invalid_status", "status", "status must be PENDING, ACTIVE, SUSPENDED or DISABLED.")
	}
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	if err := app.RequirePermission(apiKeyOf(c), app.PermViewChannels); err != nil {
		return err
	}
	rows, more, err := s.Accounts.List(c.UserContext(), apiKeyOf(c).TenantID, f, req)
	if err != nil {
		return err
	}
	out := make([]*accountJSON, len(rows))
	for i, r := range rows {
		out[i] = accountOut(r.ChannelAccount)
	}
	return c.JSON(fiber.Map{"channel_accounts": out, "page": pageInfo(req, len(rows), more)})
}

// accountDetail reads one account of the key's tenant for an answer: the
// account GET asks for, or the one a change just made (which a key that
// may change but not read still gets back, as with every other change).
func (s *Server) accountDetail(c *fiber.Ctx, id uuid.UUID) (*accountJSON, error) {
	d, err := s.Accounts.Get(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return nil, err
	}
	return accountDetailOut(d), nil
}

// handleAPIAccountGet returns one channel account.
func (s *Server) handleAPIAccountGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := app.RequirePermission(apiKeyOf(c), app.PermViewChannels); err != nil {
		return err
	}
	out, err := s.accountDetail(c, id)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// accountCreateBody is what POST /api/v1/channel-accounts takes.
type accountCreateBody struct {
	Provider string `json:"provider"`
	// Channel is required for sandbox accounts, which serve any channel.
	Channel string            `json:"channel"`
	Name    string            `json:"name"`
	Config  map[string]string `json:"config"`
	Secrets map[string]string `json:"secrets"`
	// Credentials is "keys" (the default) or "default" (the platform's AWS
	// credential chain, operators only) for AWS accounts.
	Credentials string `json:"credentials"`
}

// handleAPIAccountCreate creates a PENDING channel account, as the
// console's form does: 201 with the account.
func (s *Server) handleAPIAccountCreate(c *fiber.Ctx) error {
	var body accountCreateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if spec, ok := console.ProviderSpecOf(body.Provider); ok {
		if err := checkAccountKeys(spec, body.Config, body.Secrets, nil); err != nil {
			return err
		}
	}
	a, signing, err := s.Accounts.Create(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, console.AccountForm{
		Provider: body.Provider, Channel: body.Channel, Name: body.Name, Config: body.Config, Secrets: body.Secrets,
		Credentials: body.Credentials,
	})
	if err != nil {
		return apiFields(err, accountFieldNames)
	}
	out, err := s.accountDetail(c, a.ID)
	if err != nil {
		return err
	}
	out.SigningSecret = signing
	c.Set("Cache-Control", "no-store")
	c.Location("/api/v1/channel-accounts/" + a.ID.String())
	return c.Status(fiber.StatusCreated).JSON(out)
}

// accountUpdateBody is what PATCH /api/v1/channel-accounts/{id} takes. What
// it leaves out stays as it is: settings not named keep their value (null
// or "" removes one), secrets not named stay stored, clear_secrets removes
// optional ones.
type accountUpdateBody struct {
	Name         *string            `json:"name"`
	Config       map[string]*string `json:"config"`
	Secrets      map[string]string  `json:"secrets"`
	ClearSecrets []string           `json:"clear_secrets"`
	Credentials  string             `json:"credentials"`
}

// handleAPIAccountUpdate changes an account's name, settings and secrets
// through the console's edit, which takes a whole form: the form is the
// stored account with the request's changes on top.
func (s *Server) handleAPIAccountUpdate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body accountUpdateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := app.RequirePermission(apiKeyOf(c), app.PermChannels); err != nil {
		return err
	}
	tenantID := apiKeyOf(c).TenantID
	d, err := s.Accounts.Get(c.UserContext(), tenantID, id)
	if err != nil {
		return err
	}
	if d.Spec == nil {
		return app.Errorf(app.ECONFLICT, "Provider %s cannot be edited.", d.Provider)
	}
	config := map[string]string{}
	for k, v := range body.Config {
		if v != nil {
			config[k] = *v
		} else {
			config[k] = ""
		}
	}
	if err := checkAccountKeys(d.Spec, config, body.Secrets, body.ClearSecrets); err != nil {
		return err
	}
	f := console.AccountForm{Provider: d.Provider, Name: d.Name, Config: map[string]string{}, Secrets: body.Secrets,
		Clear: map[string]bool{}, Credentials: body.Credentials}
	if body.Name != nil {
		f.Name = *body.Name
	}
	for _, fd := range d.Spec.Fields {
		if !fd.Secret {
			f.Config[fd.Key] = d.Config[fd.Key]
		}
	}
	for k, v := range config {
		f.Config[k] = v
	}
	for _, k := range body.ClearSecrets {
		f.Clear[k] = true
	}
	if f.Credentials == "" && d.DefaultCredentials {
		f.Credentials = console.CredentialsDefault
	}
	if err := s.Accounts.Update(c.UserContext(), apiKeyOf(c), tenantID, id, f); err != nil {
		return apiFields(err, accountFieldNames)
	}
	out, err := s.accountDetail(c, id)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// handleAPIAccountActivate makes the account its channel's sending
// account: {"replace": true} suspends the channel's active one in its
// place; without it, another active account is a 409.
func (s *Server) handleAPIAccountActivate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		Replace bool `json:"replace"`
	}
	if len(c.Body()) > 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	if err := s.Accounts.Activate(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, body.Replace); err != nil {
		return err
	}
	out, err := s.accountDetail(c, id)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// handleAPIAccountSuspend stops an account from sending: {"reason": ...}.
func (s *Server) handleAPIAccountSuspend(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := s.Accounts.Suspend(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, body.Reason); err != nil {
		return err
	}
	out, err := s.accountDetail(c, id)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// handleAPIAccountTest queues a test message through an active account,
// {"to": address} (a webhook account posts to its own URL): 202 with the
// message, whose status GET /api/v1/messages/{id} follows.
func (s *Server) handleAPIAccountTest(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		To string `json:"to"`
	}
	if len(c.Body()) > 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	m, err := s.Accounts.SendTest(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, body.To)
	if err != nil {
		return err
	}
	c.Location("/api/v1/messages/" + m.ID.String())
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"message": m})
}
