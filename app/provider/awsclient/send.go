package awsclient

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/app/provider"
)

// DefaultTimeout bounds a send when the adapter sets no timeout.
const DefaultTimeout = 30 * time.Second

// Send is the frame of one AWS send that the adapters share: the call is
// bounded by timeout (zero: DefaultTimeout), credentials included, so a
// hanging connection becomes a retry instead of a stuck worker; it runs
// on the account's client; a failure is classified, and one the adapter's
// table does not know is logged so that it gets classified; an accepted
// call without a message id is a transient failure. call builds its
// request after the client exists (an account's bad settings are reported
// before its request's) and returns the MessageId; a *provider.Error it
// returns (a request Herald cannot build) is passed on as it is.
func Send[C any](ctx context.Context, m provider.Outbound, service string, timeout time.Duration, log *slog.Logger,
	client func(context.Context, provider.Account) (C, bool, error),
	classify func(err error, static bool) (*provider.Error, bool),
	call func(context.Context, C) (*string, error),
) (string, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, static, err := client(ctx, m.Account)
	if err != nil {
		return "", err
	}
	id, err := call(ctx, c)
	var built *provider.Error
	switch {
	case errors.As(err, &built):
		return "", err
	case err != nil:
		pe, known := classify(err, static)
		if !known && log != nil {
			log.Warn("unclassified "+service+" error", "code", pe.Code, "reason", pe.Reason, "account_id", m.Account.ID, "message_id", m.MessageID)
		}
		return "", pe
	case id == nil || *id == "":
		return "", &provider.Error{Code: "missing_message_id", Class: provider.Transient, Reason: service + " accepted the message without returning a MessageId."}
	}
	return *id, nil
}
