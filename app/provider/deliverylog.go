package provider

import (
	"context"
	"time"
)

// DeliveryLog reads the delivery-status records a provider keeps in a log
// of the tenant's own provider account, where it reports them nowhere
// else (SNS keeps an SMS's outcome only in CloudWatch Logs).
type DeliveryLog interface {
	// LogGroups names the account's delivery-status logs and the region
	// they are in.
	LogGroups(ctx context.Context, a Account) (LogGroups, error)
	// ReadLog reads one page of a log group. Errors are *Error: a
	// RateLimited one is the log's quota, to be waited out.
	ReadLog(ctx context.Context, a Account, q LogQuery) (LogPage, error)
}

// LogGroups are an account's delivery-status logs.
type LogGroups struct {
	// Region is where the logs are; Groups are their names.
	Region string
	Groups []string
	// Throttle names the quota the account's reads count against (the
	// provider account and region): accounts that share it share its
	// pace.
	Throttle string
}

// LogQuery asks for the events of a log group with timestamps from Start
// to End, continuing after Token when it is set (the same Start and End as
// the call that returned it).
type LogQuery struct {
	Group      string
	Start, End time.Time
	Token      string
	// Limit is the most events of a page; zero is the provider's default.
	Limit int
}

// LogPage is one page of a log's events, in the log's order.
type LogPage struct {
	Events []LogEvent
	// NextToken continues the query; empty when the query is read to its
	// end.
	NextToken string
}

// LogEvent is one record of a delivery-status log, with the receipt the
// adapter read from it.
type LogEvent struct {
	// ID is the log's own id of the event.
	ID      string
	At      time.Time
	Message string
	// Receipt is what the record reports, as the provider's webhook
	// receipts report it (the same ReceiptID for the same report, so a
	// record that comes both ways is stored once).
	Receipt Receipt
	// Unreadable says why the record is no receipt; Receipt is then zero.
	Unreadable error
}

// Error codes of DeliveryLog that a reader acts on.
const (
	// CodeLogGroupMissing: the log group does not exist (yet): nothing
	// was logged, or delivery status logging is off.
	CodeLogGroupMissing = "log_group_missing"
	// CodeLogTokenExpired: the page token is no longer accepted; the
	// query starts again from its Start.
	CodeLogTokenExpired = "log_token_expired"
)
