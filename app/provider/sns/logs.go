package sns

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
	"github.com/heraldhq/herald/app/provider/awsnotify"
)

// Account settings of the delivery-status logs.
const (
	// ConfigLogRegion is the region of the account's delivery-status logs,
	// when SNS sends its SMS from another region than the account's.
	ConfigLogRegion = "delivery_log_region"
	// ConfigLogEndpoint replaces the CloudWatch Logs endpoint (a VPC
	// endpoint; an emulator where AnyEndpoint allows it), as
	// ConfigEndpoint replaces the SNS one; it needs the account's own
	// keys.
	ConfigLogEndpoint = "delivery_log_endpoint_url"
)

// SNS writes SMS delivery status to these log groups, under
// sns/<region>/<AWS account id>/: successes to the first, failures to the
// second.
const (
	LogGroupSuccess = "DirectPublishToPhoneNumber"
	LogGroupFailure = "DirectPublishToPhoneNumber/Failure"
)

// DeliveryLogs reads SNS accounts' SMS delivery-status logs from CloudWatch
// Logs (FilterLogEvents) with the accounts' own keys. The AWS account id in
// the groups' names comes from STS GetCallerIdentity, which needs no
// permission. The zero value is ready to use.
type DeliveryLogs struct {
	// Endpoint replaces the endpoint of every account (CloudWatch Logs and
	// STS alike); tests point it at a fake or an emulator.
	Endpoint string
	// AnyEndpoint lets accounts name any http or https endpoint URL, as
	// Provider.AnyEndpoint does; for development only.
	AnyEndpoint bool
	// HTTPClient sends the requests; nil uses the SDK's default client.
	HTTPClient *http.Client
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration

	clients awsclient.Cache[*logClients]
}

var _ provider.DeliveryLog = (*DeliveryLogs)(nil)

// logClients are one account's clients, and its AWS account id once known.
type logClients struct {
	logs *cloudwatchlogs.Client
	sts  *sts.Client

	mu         sync.Mutex
	awsAccount string
}

// logRules classifies FilterLogEvents' codes on top of the common ones.
var logRules = awsclient.WithCommon(map[string]awsclient.Rule{
	"ResourceNotFoundException":   awsclient.Permanent,
	"InvalidParameterException":   awsclient.Permanent,
	"LimitExceededException":      awsclient.Throttled,
	"ServiceUnavailableException": awsclient.Transient,
})

// logAccount is the account as its log clients see it: the logs' region
// and endpoint in place of SNS's.
func logAccount(a provider.Account) provider.Account {
	cfg := maps.Clone(a.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if r := strings.TrimSpace(cfg[ConfigLogRegion]); r != "" {
		cfg[ConfigRegion] = r
	}
	cfg[ConfigEndpoint] = strings.TrimSpace(cfg[ConfigLogEndpoint])
	return provider.Account{ID: a.ID, TenantID: a.TenantID, Provider: a.Provider, Config: cfg, Secrets: a.Secrets}
}

// client returns the account's log clients and whether it brings its own
// keys.
func (d *DeliveryLogs) client(ctx context.Context, a provider.Account) (*logClients, bool, error) {
	la := logAccount(a)
	ep := awsclient.Endpoints{Override: d.Endpoint, AnyHost: d.AnyEndpoint}
	return d.clients.Client(ctx, la, "CloudWatch Logs", ep, func(cfg aws.Config) *logClients {
		hc := d.clients.HTTPClient(d.HTTPClient)
		return &logClients{
			logs: cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) {
				o.Retryer, o.RetryMaxAttempts, o.HTTPClient = aws.NopRetryer{}, 1, hc
				o.APIOptions = append(o.APIOptions, awsclient.KeepErrorBody)
			}),
			sts: sts.NewFromConfig(cfg, func(o *sts.Options) {
				o.Retryer, o.RetryMaxAttempts, o.HTTPClient = aws.NopRetryer{}, 1, hc
				if d.Endpoint == "" && la.Config[ConfigEndpoint] != "" && !d.AnyEndpoint {
					// The account's endpoint is CloudWatch Logs' (a VPC
					// endpoint of that service): STS keeps its own. An
					// emulator (AnyEndpoint, development) serves both.
					o.BaseEndpoint = nil
				}
			}),
		}
	})
}

func (d *DeliveryLogs) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

// LogGroups implements provider.DeliveryLog.
func (d *DeliveryLogs) LogGroups(ctx context.Context, a provider.Account) (provider.LogGroups, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	c, static, err := d.client(ctx, a)
	if err != nil {
		return provider.LogGroups{}, err
	}
	id, err := c.account(ctx, static)
	if err != nil {
		return provider.LogGroups{}, err
	}
	region := strings.TrimSpace(logAccount(a).Config[ConfigRegion])
	prefix := "sns/" + region + "/" + id + "/"
	return provider.LogGroups{Region: region, Groups: []string{prefix + LogGroupSuccess, prefix + LogGroupFailure},
		Throttle: id + ":" + region}, nil
}

// account returns the AWS account id of the clients' keys, asking STS
// once.
func (c *logClients) account(ctx context.Context, static bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.awsAccount != "" {
		return c.awsAccount, nil
	}
	out, err := c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		pe, _ := awsclient.Classify(err, static, ruleOf(logRules))
		return "", pe
	}
	id := aws.ToString(out.Account)
	if !awsAccountID(id) {
		return "", &provider.Error{Code: "invalid_account_id", Class: provider.Transient, Reason: "STS answered an account id that is not 12 digits: " + id}
	}
	c.awsAccount = id
	return id, nil
}

func awsAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func ruleOf(rules map[string]awsclient.Rule) func(code, msg string) (awsclient.Rule, bool) {
	return func(code, _ string) (awsclient.Rule, bool) {
		r, ok := rules[code]
		return r, ok
	}
}

// ReadLog implements provider.DeliveryLog with one FilterLogEvents call.
// Each event is read as the SMS status webhook reads a record
// (awsnotify.SMSReceipt), so both ways give the same receipt.
func (d *DeliveryLogs) ReadLog(ctx context.Context, a provider.Account, q provider.LogQuery) (provider.LogPage, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	c, static, err := d.client(ctx, a)
	if err != nil {
		return provider.LogPage{}, err
	}
	in := &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(q.Group),
		StartTime: aws.Int64(q.Start.UnixMilli()), EndTime: aws.Int64(q.End.UnixMilli())}
	if q.Token != "" {
		in.NextToken = aws.String(q.Token)
	}
	if q.Limit > 0 {
		in.Limit = aws.Int32(int32(min(q.Limit, 10000)))
	}
	out, err := c.logs.FilterLogEvents(ctx, in)
	if err != nil {
		return provider.LogPage{}, logError(err, static, q)
	}
	page := provider.LogPage{NextToken: aws.ToString(out.NextToken)}
	if page.NextToken == q.Token && len(out.Events) == 0 {
		// A token that leads to itself ends the query rather than the
		// reader's page budget.
		page.NextToken = ""
	}
	for _, e := range out.Events {
		ev := provider.LogEvent{ID: aws.ToString(e.EventId), At: time.UnixMilli(aws.ToInt64(e.Timestamp)).UTC(),
			Message: aws.ToString(e.Message)}
		ev.Receipt, ev.Unreadable = awsnotify.SMSReceipt([]byte(ev.Message))
		page.Events = append(page.Events, ev)
	}
	return page, nil
}

// logError classifies a FilterLogEvents failure, naming the two a reader
// acts on: a group that does not exist, and a page token no longer taken.
func logError(err error, static bool, q provider.LogQuery) error {
	pe, _ := awsclient.Classify(err, static, ruleOf(logRules))
	switch {
	case pe.Code == "ResourceNotFoundException":
		return &provider.Error{Code: provider.CodeLogGroupMissing, Class: provider.Permanent,
			Reason: "log group " + q.Group + " does not exist: " + pe.Reason}
	case pe.Code == "InvalidParameterException" && q.Token != "":
		return &provider.Error{Code: provider.CodeLogTokenExpired, Class: provider.Permanent, Reason: pe.Reason}
	}
	return pe
}
