package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// SNS reports an SMS's outcome only to CloudWatch Logs, in the tenant's own
// AWS account. The delivery-log reader reads those logs with each ACTIVE SNS
// account's own keys and feeds what it reads to the receipt inbox, the way
// the SMS status webhook does: the one rulebook (Receipts.apply) decides
// every receipt, whichever way it came.
//
// A periodic scan enqueues one read per account; a read pages through each
// log group from a stored cursor (per account, region and group), a page at
// a time, each page's receipts and the cursor's move committed together in
// one transaction of the account's tenant. CloudWatch takes events in late
// and out of order, so every window starts a little before the previous one
// ended (SMSLogs.Overlap): events read twice are the same receipts (same
// ReceiptID), which the inbox and the rulebook store once.

// Defaults of the delivery-log reader.
const (
	// DefaultSMSLogOverlap is how far before the end of the last window
	// the next one starts: CloudWatch makes events searchable a little
	// after their timestamp.
	DefaultSMSLogOverlap = 5 * time.Minute
	// DefaultSMSLogLookback is how far back an account's first read
	// starts (not before the account was created).
	DefaultSMSLogLookback = 24 * time.Hour
	// DefaultSMSLogPages bounds the pages one read of an account takes
	// (both groups together); a backlog is read over several runs.
	DefaultSMSLogPages = 20
	// DefaultSMSLogPerSecond is the pace of reads per AWS account and
	// region. FilterLogEvents is limited to 5 requests a second per AWS
	// account and region, a quota AWS does not raise and that the tenant's
	// own tools share: Herald takes at most two of them.
	DefaultSMSLogPerSecond = 2.0
	// DefaultSMSLogRetries is how often a throttled read is tried again,
	// after waits of 1, 2, 4 ... seconds, before the run ends and the next
	// one continues.
	DefaultSMSLogRetries = 3
	// smsLogMaxWait is the longest wait for the pace's token that a read
	// sits out; a longer one ends the run.
	smsLogMaxWait = 10 * time.Second
)

// SMSLogCursor is where the reader is in one log group of an account: the
// window it pages through and the page token within it (empty once the
// window is read to its end).
type SMSLogCursor struct {
	TenantID    uuid.UUID `db:"tenant_id"`
	AccountID   uuid.UUID `db:"channel_account_id"`
	Region      string    `db:"region"`
	Group       string    `db:"log_group"`
	WindowStart time.Time `db:"window_start"`
	WindowEnd   time.Time `db:"window_end"`
	NextToken   string    `db:"next_token"`
	// Version counts the cursor's moves; 0 is a cursor not stored yet.
	Version int64     `db:"version"`
	ReadAt  time.Time `db:"read_at"`
	// Events and Receipts count what the group's reads found: every event,
	// and the receipts handed to the inbox.
	Events   int64 `db:"events"`
	Receipts int64 `db:"receipts"`
}

// SMSLogRun is what an account's last read did, as its page shows it.
type SMSLogRun struct {
	TenantID  uuid.UUID `db:"tenant_id"`
	AccountID uuid.UUID `db:"channel_account_id"`
	Region    string    `db:"region"`
	RanAt     time.Time `db:"ran_at"`
	// ReadAt is the last run without an error.
	ReadAt      *time.Time `db:"read_at"`
	LastError   string     `db:"last_error"`
	LastErrorAt *time.Time `db:"last_error_at"`
}

// SMSLogState is the reader's state of one account: its last run and its
// cursors.
type SMSLogState struct {
	Run     *SMSLogRun
	Cursors []*SMSLogCursor
}

// SMSLogTx lists the statements of the delivery-log reader.
type SMSLogTx interface {
	Tx
	ReceiptInbox
	// SMSLogAccounts lists every tenant's ACTIVE SNS accounts (platform
	// scope).
	SMSLogAccounts(ctx context.Context) ([]*ChannelAccount, error)
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*ChannelAccount, error)
	// SMSLogCursor returns the group's stored cursor, or ENOTFOUND.
	SMSLogCursor(ctx context.Context, tenantID, accountID uuid.UUID, region, group string) (*SMSLogCursor, error)
	// MoveSMSLogCursor stores c, moved, if the stored cursor still has
	// c.Version (none stored for 0), and reports whether it did.
	MoveSMSLogCursor(ctx context.Context, c *SMSLogCursor) (bool, error)
	// SMSLogReceiptsDue returns the ReceiptIDs of those receipts that name
	// a message of the tenant's by its SNS id and that are neither stored
	// already nor waiting in the inbox.
	SMSLogReceiptsDue(ctx context.Context, tenantID uuid.UUID, rs []provider.Receipt) (map[string]bool, error)
	// RecordSMSLogRun stores an account's last run; an empty LastError
	// keeps the last error and its time.
	RecordSMSLogRun(ctx context.Context, r SMSLogRun) error
	// SMSLogState returns an account's last run (nil when it never ran)
	// and cursors.
	SMSLogState(ctx context.Context, tenantID, accountID uuid.UUID) (SMSLogState, error)
}

// SMSLogQueue enqueues, in the caller's transaction, a read of one
// account's delivery logs.
type SMSLogQueue interface {
	EnqueueSMSLogRead(ctx context.Context, tx Tx, tenantID, accountID uuid.UUID) error
}

// SMSLogs reads SNS accounts' delivery-status logs into the receipt inbox.
type SMSLogs struct {
	Store    Store[SMSLogTx]
	Accounts *Accounts
	Receipts *Receipts
	Queue    SMSLogQueue
	// Log reads the logs (the SNS adapter's CloudWatch Logs client).
	Log provider.DeliveryLog
	// Rates paces the reads per AWS account and region, across processes.
	Rates RateStore
	// BucketNow is the pace buckets' clock; nil is the database's.
	BucketNow Clock
	// Sleep waits out a throttled read or the pace; nil waits on a timer.
	// It returns early with ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
	// Overlap, Lookback, Pages, PerSecond and Retries: zero is the
	// DefaultSMSLog… value.
	Overlap   time.Duration
	Lookback  time.Duration
	Pages     int
	PerSecond float64
	Retries   int
	Now       Clock
	Logger    *slog.Logger
}

// SMSLogResult is what one read of an account did.
type SMSLogResult struct {
	Region string
	// Pages, Events and Receipts count the pages read, their events and
	// the receipts handed to the inbox.
	Pages, Events, Receipts int
	// Unreadable counts events that are no delivery status.
	Unreadable int
	// Missing names the log groups that do not exist.
	Missing []string
	// Conflict: another read moved a cursor first; this one stopped.
	Conflict bool
}

// Scan enqueues a read of every ACTIVE SNS account's delivery logs, each in
// a transaction of the account's tenant. It returns how many it enqueued.
func (s *SMSLogs) Scan(ctx context.Context) (int, error) {
	var as []*ChannelAccount
	if err := s.Store.InPlatform(ctx, func(tx SMSLogTx) (err error) {
		as, err = tx.SMSLogAccounts(ctx)
		return err
	}); err != nil {
		return 0, err
	}
	for i, a := range as {
		err := s.Store.InTenant(ctx, a.TenantID, func(tx SMSLogTx) error {
			return s.Queue.EnqueueSMSLogRead(ctx, tx, a.TenantID, a.ID)
		})
		if err != nil {
			return i, fmt.Errorf("enqueue the delivery-log read of account %s: %w", a.ID, err)
		}
	}
	return len(as), nil
}

// errSMSLogConflict rolls back a page whose cursor another read moved.
var errSMSLogConflict = errors.New("the cursor moved meanwhile")

// Read reads one account's delivery logs, up to the page budget, and
// records the run on the account (its page shows it). An account that is
// gone, not SNS or not ACTIVE is ENOTFOUND or EINVALID. A problem of the
// account or of AWS (refused keys, throttling, a missing log group) is
// recorded as the run's error and returned; a database error is returned
// only.
func (s *SMSLogs) Read(ctx context.Context, tenantID, accountID uuid.UUID) (SMSLogResult, error) {
	a, pa, err := s.account(ctx, tenantID, accountID)
	if err != nil {
		return SMSLogResult{}, err
	}
	res, readErr := s.read(ctx, a, pa)
	if readErr != nil && (ErrorCode(readErr) == EUNAVAILABLE || ctx.Err() != nil) {
		return res, readErr
	}
	run := SMSLogRun{TenantID: tenantID, AccountID: accountID, Region: res.Region, RanAt: s.Now()}
	switch {
	case readErr != nil:
		run.LastError = truncate(readErr.Error(), 2000)
	case len(res.Missing) > 0 && res.Pages == len(res.Missing):
		run.LastError = "No delivery-status log group found (" + strings.Join(res.Missing, ", ") +
			"): turn on SMS delivery status logging in SNS (Text messaging preferences)."
	default:
		run.ReadAt = &run.RanAt
	}
	if run.LastError != "" {
		run.LastErrorAt = &run.RanAt
		s.Logger.WarnContext(ctx, "reading SMS delivery logs failed", "tenant_id", tenantID, "channel_account_id", accountID,
			"err", run.LastError)
	}
	if err := s.Store.InTenant(ctx, tenantID, func(tx SMSLogTx) error { return tx.RecordSMSLogRun(ctx, run) }); err != nil {
		return res, err
	}
	return res, readErr
}

// account loads an ACTIVE SNS account with its secrets open.
func (s *SMSLogs) account(ctx context.Context, tenantID, accountID uuid.UUID) (*ChannelAccount, provider.Account, error) {
	var a *ChannelAccount
	err := s.Store.InTenant(ctx, tenantID, func(tx SMSLogTx) (err error) {
		a, err = tx.AccountByID(ctx, tenantID, accountID)
		return err
	})
	switch {
	case err != nil:
		return nil, provider.Account{}, err
	case a.Provider != "sns":
		return nil, provider.Account{}, Errorf(EINVALID, "Only SNS accounts have SMS delivery logs.")
	case a.Status != AccountActive:
		return nil, provider.Account{}, Errorf(EINVALID, "The account is %s: only ACTIVE accounts' delivery logs are read.", a.Status)
	}
	secrets, err := s.Accounts.Open(a)
	if err != nil {
		return nil, provider.Account{}, fmt.Errorf("channel account %s: %w", a.ID, err)
	}
	return a, provider.Account{ID: a.ID, TenantID: a.TenantID, Provider: a.Provider, Config: a.Config, Secrets: secrets}, nil
}

// read pages through each of the account's log groups.
func (s *SMSLogs) read(ctx context.Context, a *ChannelAccount, pa provider.Account) (SMSLogResult, error) {
	var res SMSLogResult
	if strings.TrimSpace(pa.Secrets["access_key_id"]) == "" {
		return res, Errorf(EINVALID, "The account uses the server's AWS credentials: its delivery logs are read only with keys of its own (access_key_id and secret_access_key with logs:FilterLogEvents).")
	}
	groups, err := s.Log.LogGroups(ctx, pa)
	if err != nil {
		return res, awsRefusal("name the delivery-status log groups", err)
	}
	res.Region = groups.Region
	budget := cmp.Or(s.Pages, DefaultSMSLogPages)
	for _, g := range groups.Groups {
		if err := s.readGroup(ctx, a, pa, groups, g, &budget, &res); err != nil || res.Conflict {
			return res, err
		}
	}
	return res, nil
}

// awsRefusal turns a failed AWS call into the error the account's page
// shows.
func awsRefusal(what string, err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return Errorf(EINVALID, "AWS refused to %s: %s (%s).", what, pe.Reason, pe.Code)
	}
	return err
}

// readGroup reads one log group page by page, until its window is read to
// the end or the budget is spent.
func (s *SMSLogs) readGroup(ctx context.Context, a *ChannelAccount, pa provider.Account, groups provider.LogGroups, group string,
	budget *int, res *SMSLogResult) error {
	for *budget > 0 {
		c, err := s.cursor(ctx, a, groups.Region, group)
		if err != nil {
			return err
		}
		q := s.query(c, a)
		*budget--
		res.Pages++
		page, q, err := s.readPage(ctx, pa, groups.Throttle, q)
		if err != nil && provider.Classify(err).Code == provider.CodeLogGroupMissing {
			res.Missing = append(res.Missing, group)
			return nil
		}
		if err != nil {
			return awsRefusal("read "+group, err)
		}
		if moved, err := s.store(ctx, a, c, q, page, res); err != nil || !moved {
			res.Conflict = !moved
			return err
		}
		if page.NextToken == "" {
			return nil
		}
	}
	return nil
}

// cursor returns the group's stored cursor, or a new one (Version 0).
func (s *SMSLogs) cursor(ctx context.Context, a *ChannelAccount, region, group string) (*SMSLogCursor, error) {
	var c *SMSLogCursor
	err := s.Store.InTenant(ctx, a.TenantID, func(tx SMSLogTx) (err error) {
		c, err = tx.SMSLogCursor(ctx, a.TenantID, a.ID, region, group)
		return err
	})
	if ErrorCode(err) == ENOTFOUND {
		return &SMSLogCursor{TenantID: a.TenantID, AccountID: a.ID, Region: region, Group: group}, nil
	}
	return c, err
}

// query is the next page's query: the cursor's window after its token,
// else a new window from shortly before the last one's end (the first one
// from the lookback, not before the account was created) to now.
func (s *SMSLogs) query(c *SMSLogCursor, a *ChannelAccount) provider.LogQuery {
	if c.NextToken != "" {
		return provider.LogQuery{Group: c.Group, Start: c.WindowStart, End: c.WindowEnd, Token: c.NextToken}
	}
	now := s.Now()
	start := c.WindowEnd.Add(-cmp.Or(s.Overlap, DefaultSMSLogOverlap))
	if c.Version == 0 {
		start = now.Add(-cmp.Or(s.Lookback, DefaultSMSLogLookback))
		if created := a.CreatedAt.Add(-time.Minute); created.After(start) {
			start = created
		}
	}
	if start.After(now) {
		start = now
	}
	return provider.LogQuery{Group: c.Group, Start: start, End: now}
}

// readPage reads one page at the account's pace. A throttled read waits
// and is tried again (DefaultSMSLogRetries), slowing the pace of every
// reader of the same AWS account; a page token no longer accepted starts
// the window again from its start, which is only a re-read. It returns the
// query the page answers.
func (s *SMSLogs) readPage(ctx context.Context, pa provider.Account, throttle string, q provider.LogQuery) (provider.LogPage, provider.LogQuery, error) {
	key := "sms-logs:" + throttle
	perSecond := cmp.Or(s.PerSecond, DefaultSMSLogPerSecond)
	for attempt := 0; ; attempt++ {
		if err := s.pace(ctx, key, perSecond); err != nil {
			return provider.LogPage{}, q, err
		}
		page, err := s.Log.ReadLog(ctx, pa, q)
		if err == nil {
			return page, q, nil
		}
		pe := provider.Classify(err)
		switch {
		case pe.Code == provider.CodeLogTokenExpired && q.Token != "":
			q.Token = ""
			continue
		case pe.Class == provider.RateLimited && attempt < cmp.Or(s.Retries, DefaultSMSLogRetries):
			wait := max(pe.RetryAfter, time.Second<<attempt)
			if err := s.Rates.Throttle(ctx, key, perSecond, s.bucketNow(), wait, DefaultSlowDown); err != nil {
				return provider.LogPage{}, q, err
			}
			s.Logger.InfoContext(ctx, "CloudWatch Logs throttled a read; waiting", "account", pa.ID, "wait", wait, "attempt", attempt+1)
			if err := s.sleep(ctx, wait); err != nil {
				return provider.LogPage{}, q, err
			}
			continue
		}
		return provider.LogPage{}, q, err
	}
}

// pace takes a token of the AWS account's shared bucket, waiting for one
// when the wait is short; a long wait (the bucket slowed after throttling)
// ends the run as throttled.
func (s *SMSLogs) pace(ctx context.Context, key string, perSecond float64) error {
	for {
		wait, err := s.Rates.TakeToken(ctx, key, perSecond, perSecond, s.bucketNow(), DefaultSlowDown)
		switch {
		case err != nil:
			return err
		case wait <= 0:
			return nil
		case wait > smsLogMaxWait:
			return &provider.Error{Code: "paced", Class: provider.RateLimited, RetryAfter: wait,
				Reason: "reads of this AWS account wait " + wait.Round(time.Second).String() + " after CloudWatch Logs throttled them; the next run continues"}
		}
		if err := s.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func (s *SMSLogs) bucketNow() time.Time {
	if s.BucketNow == nil {
		return time.Time{}
	}
	return s.BucketNow()
}

func (s *SMSLogs) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// store hands a page's receipts of the tenant's messages to the inbox and
// moves the cursor past the page, in one transaction of the tenant: a
// crash before the commit leaves both as they were, and the page is read
// again. It reports false, storing nothing, when another read moved the
// cursor first.
func (s *SMSLogs) store(ctx context.Context, a *ChannelAccount, c *SMSLogCursor, q provider.LogQuery, page provider.LogPage,
	res *SMSLogResult) (bool, error) {
	var receipts []provider.Receipt
	unreadable := 0
	for _, e := range page.Events {
		if e.Unreadable != nil {
			unreadable++
			s.Logger.WarnContext(ctx, "SMS delivery log event is no delivery status; skipped", "channel_account_id", a.ID,
				"group", q.Group, "event_id", e.ID, "err", e.Unreadable)
			continue
		}
		receipts = append(receipts, e.Receipt)
	}
	via := Via{TenantID: a.TenantID, Accounts: []uuid.UUID{a.ID}, Route: "sns-logs:" + a.ID.String()}
	next := *c
	next.WindowStart, next.WindowEnd, next.NextToken, next.ReadAt = q.Start, q.End, page.NextToken, s.Now()
	next.Events += int64(len(page.Events))
	accepted := 0
	err := s.Store.InTenant(ctx, a.TenantID, func(tx SMSLogTx) error {
		due, err := tx.SMSLogReceiptsDue(ctx, a.TenantID, receipts)
		if err != nil {
			return err
		}
		in := make([]InboxReceipt, 0, len(due))
		for _, r := range receipts {
			if due[r.ReceiptID] {
				due[r.ReceiptID] = false // twice in one page: once
				in = append(in, InboxReceipt{Via: via, Receipt: r})
			}
		}
		if err := s.Receipts.acceptInto(ctx, tx, in); err != nil {
			return err
		}
		accepted, next.Receipts = len(in), c.Receipts+int64(len(in))
		moved, err := tx.MoveSMSLogCursor(ctx, &next)
		if err == nil && !moved {
			return errSMSLogConflict
		}
		return err
	})
	if errors.Is(err, errSMSLogConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	res.Events += len(page.Events)
	res.Receipts += accepted
	res.Unreadable += unreadable
	return true, nil
}

// State returns the reader's state of an account, for its page.
func (s *SMSLogs) State(ctx context.Context, tenantID, accountID uuid.UUID) (SMSLogState, error) {
	var st SMSLogState
	err := s.Store.InTenant(ctx, tenantID, func(tx SMSLogTx) (err error) {
		st, err = tx.SMSLogState(ctx, tenantID, accountID)
		return err
	})
	return st, err
}
