// Package sns sends SMS through Amazon SNS (Publish to a phone number),
// with the credentials and settings of each tenant's channel account, and
// classifies SNS's errors for the dispatcher.
package sns

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
)

// Name is the provider name of Amazon SNS.
const Name = "sns"

// DefaultTimeout bounds a send when Provider.Timeout is zero.
const DefaultTimeout = awsclient.DefaultTimeout

// SMS message attributes (PROVIDERS.md, "Amazon SNS SMS").
const (
	AttrSMSType           = "AWS.SNS.SMS.SMSType"
	AttrSenderID          = "AWS.SNS.SMS.SenderID"
	AttrOriginationNumber = "AWS.MM.SMS.OriginationNumber"
)

// MaxMessageChars is the most SNS takes in one SMS publish: 1,600
// characters, not bytes (a German text with umlauts has more bytes than
// characters). SNS splits the text into parts itself (160 GSM characters
// or 70 UCS-2 characters each).
const MaxMessageChars = 1600

var (
	// e164 is a phone number in E.164 format, as Herald stores them.
	e164 = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)
	// shortCode is a 3 to 8 digit short code, a possible origination number.
	shortCode = regexp.MustCompile(`^[0-9]{3,8}$`)
	// senderID is 1 to 11 letters and digits with at least one letter
	// (the length is checked apart).
	senderID = regexp.MustCompile(`^[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*$`)
)

// Provider sends SMS through SNS. An account's Config holds region
// (required), and optionally sender_id (alphanumeric sender id),
// origination_number (a number or short code of the account) and
// endpoint_url (see ConfigEndpoint); its Secrets hold access_key_id and
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

	clients awsclient.Cache[*sns.Client]
}

var _ provider.Provider = (*Provider)(nil)

// Send implements provider.Provider: one Publish call, whose MessageId is
// the id SNS's SMS delivery status records carry.
func (p *Provider) Send(ctx context.Context, m provider.Outbound) (string, error) {
	return awsclient.Send(ctx, m, "SNS", p.Timeout, p.Log, p.client, classify,
		func(ctx context.Context, c *sns.Client) (*string, error) {
			in, err := input(m)
			if err != nil {
				return nil, err
			}
			out, err := c.Publish(ctx, in)
			if err != nil {
				return nil, err
			}
			return out.MessageId, nil
		})
}

// input builds the Publish request. Messages are transactional unless the
// account says promotional: Herald sends booking notifications, which SNS
// then routes for reliability rather than cost.
func input(m provider.Outbound) (*sns.PublishInput, error) {
	cfg := m.Account.Config
	smsType := "Transactional"
	if strings.TrimSpace(cfg[ConfigSMSType]) == "Promotional" {
		smsType = "Promotional"
	}
	attrs := map[string]types.MessageAttributeValue{
		AttrSMSType: stringAttr(smsType),
	}
	if id := strings.TrimSpace(cfg[ConfigSenderID]); id != "" {
		if len(id) > 11 || !senderID.MatchString(id) {
			return nil, awsclient.ConfigError("config_invalid_sender_id", fmt.Sprintf("sender_id %q must be 1 to 11 letters and digits with at least one letter.", id))
		}
		attrs[AttrSenderID] = stringAttr(id)
	}
	if num := strings.TrimSpace(cfg[ConfigOriginationNumber]); num != "" {
		if !e164.MatchString(num) && !shortCode.MatchString(num) {
			return nil, awsclient.ConfigError("config_invalid_origination_number", fmt.Sprintf("origination_number %q is neither an E.164 number nor a short code.", num))
		}
		attrs[AttrOriginationNumber] = stringAttr(num)
	}
	if !e164.MatchString(m.To) {
		// The reason reaches the timeline, where support sees addresses
		// masked: it does not repeat the number.
		return nil, &provider.Error{Code: "invalid_recipient", Class: provider.Permanent, Reason: "The recipient is not a phone number in E.164 format."}
	}
	switch n := messageChars(m.Body); {
	case strings.TrimSpace(m.Body) == "":
		return nil, &provider.Error{Code: "empty_message", Class: provider.Permanent, Reason: "The SMS text is empty."}
	case n > MaxMessageChars:
		return nil, &provider.Error{Code: "message_too_long", Class: provider.Permanent, Reason: fmt.Sprintf("The SMS text has %d characters; SNS takes at most %d in one message.", n, MaxMessageChars)}
	}
	return &sns.PublishInput{
		PhoneNumber:       aws.String(m.To),
		Message:           aws.String(m.Body),
		MessageAttributes: attrs,
	}, nil
}

// messageChars counts characters the way SNS's limit does. A character
// outside the Basic Multilingual Plane (an emoji) counts twice, as it does
// in UTF-16 and in the UCS-2 parts SNS sends it in: the count errs on the
// side of refusing here rather than at SNS.
func messageChars(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func stringAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
