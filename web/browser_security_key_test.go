package web_test

import (
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_SecurityKey adds a security key on the two-factor page with
// Chromium's virtual authenticator (CTAP2 over USB, touched at once), signs
// out, and signs in with the key as the second factor. The console is
// served as localhost: a relying party id must be a host name, not an IP
// address.
func TestBrowser_SecurityKey(t *testing.T) {
	t.Parallel()
	var base string
	c := serveConsoleWith(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
		cfg.BaseURL = &url.URL{Scheme: "http", Host: "localhost:" + cfg.BaseURL.Port()}
		base = cfg.BaseURL.String()
	}})
	ctx := newBrowser(t)
	_, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{})
	require.NoError(t, err)
	added, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportUsb,
		AutomaticPresenceSimulation: true,
	}})
	require.NoError(t, err)
	manager := c.users[asManager]

	// Add the key.
	login(t, ctx, base, manager.Email, consolePassword)
	visit(t, ctx, base+"/account/two-factor")
	requireHeading(t, ctx, "Two-factor sign-in")
	capture(t, ctx, "01-two-factor-page")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`.security-key-add input[name=name]`), "YubiKey blue")))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.security-key-add button[type=submit]`)))
	requireText(t, ctx, "They are shown only now.")
	require.Len(t, textsOf(t, ctx, `.recovery-codes code`), 10, "the first second factor brings recovery codes")
	capture(t, ctx, "02-key-added")
	creds, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: added.AuthenticatorID})
	require.NoError(t, err)
	require.Len(t, creds.Credentials, 1, "the authenticator holds the credential")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1 AND credential_id = $2`, manager.ID, creds.Credentials[0].CredentialID))

	follow(t, ctx, chromedp.Click(chromedp.CSS(`.recovery-codes a.button`)))
	require.Equal(t, []string{"YubiKey blue"}, textsOf(t, ctx, `.security-key-list .key-name`))
	capture(t, ctx, "03-key-listed")

	// Sign out, and in with the key.
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.userbox button[type=submit]`)))
	requireAt(t, ctx, "/login")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), manager.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), consolePassword),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	requireHeading(t, ctx, "Two-factor sign-in")
	capture(t, ctx, "04-second-step")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.security-key-signin button[type=submit]`)))
	requireAt(t, ctx, "/t/acme/")
	requireHeading(t, ctx, "Dashboard")
	capture(t, ctx, "05-signed-in")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND metadata->>'second_factor' = 'security_key'`))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1 AND sign_count > 0 AND last_used_at IS NOT NULL`, manager.ID),
		"the virtual key counts its signatures")
}
