package app_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// placeholderRE matches a {{variable}} placeholder. Names are case-insensitive
// at render time, so the pattern accepts either case and tolerates the spaces
// a tenant might type inside the braces.
var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// tagRE matches an HTML start or end tag: group 1 is the slash of an end tag,
// group 2 the element name, group 3 the attributes.
var tagRE = regexp.MustCompile(`<(/?)([A-Za-z][A-Za-z0-9]*)([^<>]*)>`)

// hrefRE picks the href value out of an <a> tag's attributes.
var hrefRE = regexp.MustCompile(`^\s+href="([^"]*)"\s*$`)

// emailTags are the only elements a default e-mail body uses: the mail layout
// supplies the document, styles and images.
var emailTags = map[string]bool{"p": true, "strong": true, "a": true, "br": true}

// voidTags have no end tag.
var voidTags = map[string]bool{"br": true}

type templateKey struct {
	event   string
	channel app.Channel
	locale  string
}

func (k templateKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.event, k.channel, k.locale)
}

func keyOf(d app.DefaultTemplate) templateKey {
	return templateKey{event: d.Event, channel: d.Channel, locale: d.Locale}
}

// placeholders returns the names used in s, lowercased.
func placeholders(s string) []string {
	var names []string
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		names = append(names, strings.ToLower(m[1]))
	}
	return names
}

// fixedText is s without its placeholders: the part of a message the
// template itself contributes.
func fixedText(s string) string { return placeholderRE.ReplaceAllString(s, "") }

// checkHTML reports the first problem in an e-mail body: an element outside
// emailTags, an attribute anywhere but on <a href>, a link that is not a
// URL variable, a <p> inside a <p>, an unclosed or stray end tag, or a bare
// angle bracket outside a tag.
func checkHTML(body string) error {
	var stack []string
	for _, m := range tagRE.FindAllStringSubmatch(body, -1) {
		closing, name, attrs := m[1] == "/", strings.ToLower(m[2]), m[3]
		if !emailTags[name] {
			return fmt.Errorf("element <%s> is not allowed", name)
		}
		if closing {
			if attrs != "" {
				return fmt.Errorf("end tag %q has attributes", m[0])
			}
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return fmt.Errorf("end tag </%s> does not close the open element (open: %v)", name, stack)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		switch name {
		case "a":
			href := hrefRE.FindStringSubmatch(attrs)
			if href == nil {
				return fmt.Errorf("link %q must have exactly one href attribute", m[0])
			}
			vars := placeholderRE.FindAllStringSubmatch(href[1], -1)
			if len(vars) != 1 || vars[0][0] != href[1] {
				return fmt.Errorf("link %q must point at exactly one variable", m[0])
			}
			if v := strings.ToLower(vars[0][1]); !strings.HasSuffix(v, "_url") && !strings.HasSuffix(v, "_link") {
				return fmt.Errorf("link %q points at %s, which is not a URL variable", m[0], v)
			}
		default:
			if strings.TrimSpace(strings.TrimSuffix(attrs, "/")) != "" {
				return fmt.Errorf("tag %q must not have attributes", m[0])
			}
		}
		if name == "p" && slices.Contains(stack, "p") {
			return fmt.Errorf("<p> opened inside a <p>")
		}
		if !voidTags[name] {
			stack = append(stack, name)
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed elements: %v", stack)
	}
	if rest := tagRE.ReplaceAllString(body, ""); strings.ContainsAny(rest, "<>") {
		return fmt.Errorf("bare < or > outside a tag")
	}
	return nil
}

// gsm7 is the GSM 03.38 basic character set. An SMS with any other character
// is sent as UCS-2, which fits 70 characters per part instead of 160.
const gsm7 = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

func TestCheckHTML(t *testing.T) {
	t.Parallel()

	// The checker must catch what it is there to catch, or the defaults
	// test below proves nothing.
	good := []string{
		`<p>Hallo,</p>`,
		`<p>Betrag: <strong>{{amount}}</strong><br>Link: <a href="{{payment_link}}">zahlen</a></p>`,
		`<p>Zeile<br/>Zeile</p>`,
	}
	for _, body := range good {
		require.NoError(t, checkHTML(body), body)
	}
	bad := []string{
		`<p>unclosed`,
		`<p><strong>crossed</p></strong>`,
		`</p>`,
		`<p>one<p>two</p></p>`,
		`<html><p>x</p></html>`,
		`<p style="color:red">x</p>`,
		`<img src="{{logo_url}}">`,
		`<p><a>no href</a></p>`,
		`<p><a href="https://example.com">fixed</a></p>`,
		`<p><a href="{{tour_name}}">not a URL</a></p>`,
		`<p><a href="{{feedback_url}}" target="_blank">x</a></p>`,
		`<p>1 < 2</p>`,
	}
	for _, body := range bad {
		require.Error(t, checkHTML(body), body)
	}
}

func TestDefaultTemplates(t *testing.T) {
	t.Parallel()

	defaults := app.DefaultTemplates()
	events := app.Events()

	t.Run("OnePerEventChannelLocale", func(t *testing.T) {
		t.Parallel()

		count := map[templateKey]int{}
		for _, d := range defaults {
			count[keyOf(d)]++
		}
		for k, n := range count {
			e, ok := app.BuiltInEvent(k.event)
			require.True(t, ok, "%s: unknown event", k)
			require.Contains(t, e.TemplateChannels(), k.channel, "%s: the event has no templates on this channel", k)
			require.Contains(t, app.DefaultLocales, k.locale, "%s: not a default locale", k)
			require.Equal(t, 1, n, "%s: defined %d times", k, n)
		}
		// Every channel a tenant gets templates for: the event's own, plus
		// SMS as the fallback wherever WhatsApp is one.
		want := 0
		for _, e := range events {
			for _, c := range e.TemplateChannels() {
				for _, l := range app.DefaultLocales {
					k := templateKey{event: e.Name, channel: c, locale: l}
					require.Equal(t, 1, count[k], "%s: missing", k)
					want++
				}
			}
		}
		require.Len(t, defaults, want)
	})

	t.Run("KnownPlaceholdersOnly", func(t *testing.T) {
		t.Parallel()

		for _, d := range defaults {
			e, ok := app.BuiltInEvent(d.Event)
			require.True(t, ok, "%s: unknown event", keyOf(d))
			for _, text := range []string{d.Subject, d.Body} {
				for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
					name := strings.ToLower(m[1])
					// An SMS links the message's files where it says {{files}}.
					files := name == app.FilesPlaceholder && d.Channel == app.SMS
					known := slices.Contains(e.Variables, name) || slices.Contains(app.RecipientVariables, name) || files
					require.True(t, known, "%s: %s is neither a variable of the event nor a recipient variable", keyOf(d), m[0])
					// The defaults are what tenants copy from: spell them
					// exactly as the registry does.
					require.Equal(t, "{{"+name+"}}", m[0], "%s: write placeholders lowercase without spaces", keyOf(d))
				}
				// A typo such as {{tour_name} or {tour_name}} would be sent
				// verbatim.
				require.NotContains(t, fixedText(text), "{", "%s: stray brace", keyOf(d))
				require.NotContains(t, fixedText(text), "}", "%s: stray brace", keyOf(d))
			}
		}
	})

	t.Run("EveryVariableUsed", func(t *testing.T) {
		t.Parallel()

		// The e-mail, where the event has one, carries every variable; an
		// event without e-mail uses every variable across its channels.
		for _, e := range events {
			for _, l := range app.DefaultLocales {
				used := map[string]bool{}
				for _, d := range defaults {
					if d.Event != e.Name || d.Locale != l {
						continue
					}
					if slices.Contains(e.Channels, app.Email) && d.Channel != app.Email {
						continue
					}
					for _, name := range placeholders(d.Subject + d.Body) {
						used[name] = true
					}
				}
				for _, v := range e.Variables {
					require.True(t, used[v], "%s/%s: variable %s is never used", e.Name, l, v)
				}
			}
		}
	})

	t.Run("ChannelFormat", func(t *testing.T) {
		t.Parallel()

		htmlTag := regexp.MustCompile(`</?[A-Za-z]`)
		for _, d := range defaults {
			k := keyOf(d)
			require.NotEmpty(t, strings.TrimSpace(d.Body), "%s: empty body", k)
			require.True(t, utf8.ValidString(d.Subject+d.Body), "%s: invalid UTF-8", k)
			switch d.Channel {
			case app.Email:
				require.NotEmpty(t, strings.TrimSpace(d.Subject), "%s: e-mail needs a subject", k)
				require.NotContains(t, d.Subject, "\n", "%s: subject must be one line", k)
				require.NotRegexp(t, htmlTag, d.Subject, "%s: subjects are plain text", k)
			case app.WhatsApp, app.SMS:
				require.Empty(t, d.Subject, "%s: only e-mail has a subject", k)
				require.NotRegexp(t, htmlTag, d.Body, "%s: plain text only", k)
				require.Equal(t, strings.TrimSpace(d.Body), d.Body, "%s: leading or trailing space", k)
			default:
				require.Failf(t, "unexpected channel", "%s", k)
			}
			if d.Channel == app.WhatsApp {
				require.LessOrEqual(t, utf8.RuneCountInString(fixedText(d.Body)), 600, "%s: too long for WhatsApp", k)
				// Meta rejects message templates whose body starts or ends
				// with a variable.
				require.False(t, strings.HasPrefix(d.Body, "{{"), "%s: starts with a placeholder", k)
				require.False(t, strings.HasSuffix(d.Body, "}}"), "%s: ends with a placeholder", k)
			}
			if d.Channel == app.SMS {
				fixed := fixedText(d.Body)
				require.LessOrEqual(t, utf8.RuneCountInString(fixed), 300, "%s: too long for SMS", k)
				require.NotContains(t, fixed, "\n", "%s: SMS is one paragraph", k)
				for _, r := range fixed {
					require.True(t, strings.ContainsRune(gsm7, r), "%s: %q is outside the GSM-7 alphabet", k, r)
				}
				// An SMS stands in for WhatsApp, so it must carry the link
				// the passenger is meant to follow.
				e, ok := app.BuiltInEvent(d.Event)
				require.True(t, ok, "%s: unknown event", k)
				for _, v := range e.Variables {
					if strings.HasSuffix(v, "_url") || strings.HasSuffix(v, "_link") {
						require.Contains(t, placeholders(d.Body), v, "%s: SMS lacks the link %s", k, v)
					}
				}
			}
		}
	})

	t.Run("EmailMarkdown", func(t *testing.T) {
		t.Parallel()

		// E-mail defaults are Markdown whose HTML, rendered with the
		// event's sample values, holds nothing but paragraphs, bold text,
		// line breaks and links, and no Markdown left unrendered.
		for _, d := range defaults {
			if d.Channel != app.Email {
				continue
			}
			require.Equal(t, app.BodyMarkdown, d.Format, "%s", keyOf(d))
			event, ok := app.BuiltInEvent(d.Event)
			require.True(t, ok)
			vars := app.TemplateVars(event.Sample, app.SampleRecipient)
			for _, v := range event.Variables {
				if strings.HasSuffix(v, "_url") || strings.HasSuffix(v, "_link") {
					vars[v] = "https://x.example/" + v
				}
			}
			out, _ := app.RenderEmailBody(d.Body, d.Format, vars)
			html := strings.ReplaceAll(out, `href="https://x.example/`, `href="{{`)
			html = regexp.MustCompile(`href="\{\{([a-z_]+)"`).ReplaceAllString(html, `href="{{$1}}"`)
			require.NoError(t, checkHTML(strings.TrimSpace(html)), "%s: %s", keyOf(d), out)
			require.True(t, strings.HasPrefix(out, "<p>"), "%s: body starts outside a paragraph", keyOf(d))
			for _, left := range []string{"**", "](", "\\"} {
				require.NotContains(t, out, left, "%s: Markdown left unrendered", keyOf(d))
			}
		}
	})

	t.Run("LocalesDiffer", func(t *testing.T) {
		t.Parallel()

		// A locale that merely copies another is a translation someone
		// forgot.
		seen := map[string]templateKey{}
		for _, d := range defaults {
			text := d.Subject + "\x00" + d.Body
			prev, dup := seen[text]
			require.False(t, dup, "%s has the same text as %s", keyOf(d), prev)
			seen[text] = keyOf(d)
		}
	})
}
