// Package ses sends e-mail through Amazon SES, API v2 (SendEmail), with
// the credentials and settings of each tenant's channel account, and
// classifies SES's errors for the dispatcher.
package ses

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"golang.org/x/net/idna"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
)

// Name is the provider name of Amazon SES.
const Name = "ses"

// DefaultTimeout bounds a send when Provider.Timeout is zero.
const DefaultTimeout = awsclient.DefaultTimeout

// charset is the charset of every part Herald sends.
const charset = "UTF-8"

// Provider sends e-mail through SES. An account's Config holds region and
// sender_email (required), and optionally sender_name, reply_to (one or
// more addresses, comma separated), configuration_set and endpoint_url
// (see ConfigEndpoint); its Secrets hold access_key_id and
// secret_access_key, or neither to use the server's default AWS
// credential chain. The zero value is ready to use.
type Provider struct {
	// Endpoint replaces the endpoint of every account, its own and the
	// environment's; tests point it at a local fake.
	Endpoint string
	// AnyEndpoint lets accounts name any http or https endpoint URL, such
	// as an emulator's on localhost; for development only. Without it an
	// account's endpoint must be https on a host under AWS's domains (a
	// VPC endpoint), so that no tenant can aim Herald's workers at a host
	// of its choosing.
	AnyEndpoint bool
	// HTTPClient sends the requests; nil uses the SDK's default client,
	// one for all accounts.
	HTTPClient *http.Client
	// Timeout bounds one send, resolving credentials included, so that a
	// hanging connection turns into a retry instead of a stuck worker;
	// zero means DefaultTimeout.
	Timeout time.Duration
	// Log, when set, receives a warning for every failure the error table
	// does not know, so that new codes become visible and get classified
	// instead of being retried silently.
	Log *slog.Logger

	clients awsclient.Cache[*sesv2.Client]
}

var _ provider.Provider = (*Provider)(nil)

// Echoes implements provider.Echoing: the events SES publishes through a
// configuration set carry the mail's tags, message_id among them; an
// account without a configuration set gets no such events.
func (p *Provider) Echoes(a provider.Account) bool {
	return strings.TrimSpace(a.Config[ConfigConfigurationSet]) != ""
}

// Send implements provider.Provider: one SendEmail call, whose MessageId
// is the external id that SES's delivery events refer to.
func (p *Provider) Send(ctx context.Context, m provider.Outbound) (string, error) {
	return awsclient.Send(ctx, m, "SES", p.Timeout, p.Log, p.client, classify,
		func(ctx context.Context, c *sesv2.Client) (*string, error) {
			in, err := input(m)
			if err != nil {
				return nil, err
			}
			out, err := c.SendEmail(ctx, in)
			if err != nil {
				return nil, err
			}
			return out.MessageId, nil
		})
}

// input builds the SendEmail request: the HTML body with a plain-text
// alternative, and tags that let SES events be traced back to the tenant
// and the message.
func input(m provider.Outbound) (*sesv2.SendEmailInput, error) {
	cfg := m.Account.Config
	name := cfg[ConfigSenderName]
	if m.SenderName != "" {
		name = m.SenderName
	}
	from, err := sender(cfg[ConfigSenderEmail], name)
	if err != nil {
		return nil, err
	}
	to, err := asciiAddress(m.To)
	if err != nil {
		// The reason reaches the timeline, where support sees addresses
		// masked: it does not repeat the address.
		return nil, &provider.Error{Code: "invalid_recipient", Class: provider.Permanent, Reason: fmt.Sprintf("The recipient is not an e-mail address SES can send to: %v.", err)}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Subject), Charset: aws.String(charset)},
			Body:    &types.Body{Html: &types.Content{Data: aws.String(m.Body), Charset: aws.String(charset)}},
		}},
		// Tag values allow [A-Za-z0-9_-] only; UUIDs qualify.
		EmailTags: []types.MessageTag{
			{Name: aws.String("tenant_id"), Value: aws.String(m.TenantID.String())},
			{Name: aws.String("message_id"), Value: aws.String(m.MessageID.String())},
		},
	}
	if m.UnsubscribeURL != "" {
		// RFC 8058 one-click unsubscribe: mail clients show an unsubscribe
		// button and POST "List-Unsubscribe=One-Click" to the https link.
		// No mailto: Herald receives no e-mail to act on.
		in.Content.Simple.Headers = []types.MessageHeader{
			{Name: aws.String("List-Unsubscribe"), Value: aws.String("<" + m.UnsubscribeURL + ">")},
			{Name: aws.String("List-Unsubscribe-Post"), Value: aws.String("List-Unsubscribe=One-Click")},
		}
	}
	if text := PlainText(m.Body); text != "" {
		in.Content.Simple.Body.Text = &types.Content{Data: aws.String(text), Charset: aws.String(charset)}
	}
	if set := strings.TrimSpace(cfg[ConfigConfigurationSet]); set != "" {
		in.ConfigurationSetName = aws.String(set)
	}
	if rt := strings.TrimSpace(cfg[ConfigReplyTo]); rt != "" {
		list, err := mail.ParseAddressList(rt)
		if err != nil {
			return nil, awsclient.ConfigError("config_invalid_reply_to", fmt.Sprintf("reply_to %q is not a list of e-mail addresses: %v", rt, err))
		}
		for _, a := range list {
			addr, err := asciiAddress(a.Address)
			if err != nil {
				return nil, awsclient.ConfigError("config_invalid_reply_to", fmt.Sprintf("reply_to %q: %v", a.Address, err))
			}
			in.ReplyToAddresses = append(in.ReplyToAddresses, display(a.Name, addr))
		}
	}
	if len(m.Attachments) > 0 {
		if err := withFiles(in, m); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// sesv2Input is SendEmail's input.
type sesv2Input = sesv2.SendEmailInput

// sender returns the From address, "Name <addr>" when the account has a
// sender name.
func sender(email, name string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", awsclient.ConfigError("config_missing_sender", "The SES account has no sender_email.")
	}
	a, err := mail.ParseAddress(email)
	if err != nil {
		return "", awsclient.ConfigError("config_invalid_sender", fmt.Sprintf("sender_email %q is not an e-mail address: %v", email, err))
	}
	addr, err := asciiAddress(a.Address)
	if err != nil {
		return "", awsclient.ConfigError("config_invalid_sender", fmt.Sprintf("sender_email %q: %v", email, err))
	}
	if n := strings.TrimSpace(name); n != "" {
		a.Name = n
	}
	return display(a.Name, addr), nil
}

// display formats an address with an optional display name; net/mail
// quotes the name and encodes non-ASCII names as RFC 2047 encoded words,
// which SES requires.
func display(name, addr string) string {
	if name == "" {
		return addr
	}
	return (&mail.Address{Name: name, Address: addr}).String()
}

// asciiAddress checks a bare e-mail address and returns it with its domain
// in punycode: SES takes 7-bit addresses only and answers others with a
// BadRequestException, which would flag the whole account.
func asciiAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", err
	}
	if a.Name != "" || a.Address != s {
		return "", fmt.Errorf("expected a bare address")
	}
	at := strings.LastIndexByte(a.Address, '@')
	local, domain := a.Address[:at], a.Address[at+1:]
	for _, r := range local {
		if r > 127 {
			return "", fmt.Errorf("the local part is not ASCII")
		}
	}
	domain, err = idna.Lookup.ToASCII(domain)
	if err != nil {
		return "", fmt.Errorf("invalid domain: %w", err)
	}
	return local + "@" + domain, nil
}
