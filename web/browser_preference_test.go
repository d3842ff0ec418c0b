package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// A support agent records a passenger's wish on the contact page, and a
// passenger follows an e-mail's unsubscribe link, in a real browser.
func TestBrowser_Preferences(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)
	id, ms := c.annaContact("evt-pref", "BK-PREF")

	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	visit(t, ctx, c.base+"/t/acme/contacts/"+id.String())
	requireText(t, ctx, "Transactional messages are still sent")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.contact-opt input[value=WHATSAPP]`))))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.contact-opt button[value=out]`)))
	requireText(t, ctx, "Opted out")
	require.Equal(t, "WHATSAPP", evalString(t, ctx, `document.querySelector('.contact-opted-out').textContent.trim()`))
	requireText(t, ctx, "console")
	capture(t, ctx, "01-contact-opted-out")

	// The passenger's link, as an optional e-mail would carry it.
	link := c.Services.Preferences.Links.URL(app.UnsubscribeTarget{TenantID: c.Tenant.ID, ContactID: id, MessageID: ms[0].ID})
	require.Contains(t, link, c.base+"/unsubscribe/")
	visit(t, ctx, link)
	requireHeading(t, ctx, "Unsubscribe from e-mails")
	capture(t, ctx, "02-unsubscribe-ask")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.unsubscribe button[type=submit]`)))
	requireHeading(t, ctx, "You are unsubscribed")
	capture(t, ctx, "03-unsubscribed")

	visit(t, ctx, c.base+"/t/acme/contacts/"+id.String())
	requireText(t, ctx, "passenger, e-mail unsubscribe link")
	capture(t, ctx, "04-contact-history")
}
