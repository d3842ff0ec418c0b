package app

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Standard Webhooks headers of every callback post.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// CallbackSecretPrefix marks a Standard Webhooks symmetric secret.
const CallbackSecretPrefix = "whsec_"

// callbackUserAgent names Herald to receivers.
const callbackUserAgent = "Herald-Callbacks/1"

// maxRetryAfter caps how long a receiver's Retry-After may put a delivery
// off: longer than the whole schedule would only hide the delivery.
const maxRetryAfter = 24 * time.Hour

// NewCallbackSecret returns a fresh signing secret: whsec_ and the base64 of
// 32 random bytes (Standard Webhooks asks for 24 to 64).
func NewCallbackSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return CallbackSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// SignCallback returns the Standard Webhooks v1 signature of a post:
// "v1," and the base64 HMAC-SHA256, keyed with the secret's decoded bytes,
// of "<webhook-id>.<timestamp>.<body>".
func SignCallback(secret, webhookID string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, CallbackSecretPrefix))
	if err != nil {
		return "", fmt.Errorf("callback secret is not base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(webhookID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// CallbackOutcome tells the job runner what to do with a delivery job.
type CallbackOutcome struct {
	// Snooze: post again after this long (the job's own attempts are not
	// used: the delivery row counts them against the schedule).
	Snooze time.Duration
}

// Deliver posts a pending delivery once and records the result: a 2xx
// answer succeeds; 410 Gone disables the endpoint, as Standard Webhooks
// asks; any other answer or none is retried on the schedule (later when a
// 429 or 503 says Retry-After) until the schedule ends and the delivery
// fails. An endpoint that has failed every attempt for DisableAfter is
// disabled. Both disablings are audited.
func (c *Callbacks) Deliver(ctx context.Context, tenantID, deliveryID uuid.UUID) (CallbackOutcome, error) {
	var d *CallbackDelivery
	var e *CallbackEndpoint
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		if d, err = tx.CallbackDeliveryByID(ctx, tenantID, deliveryID); err != nil {
			return err
		}
		e, err = tx.CallbackEndpointByID(ctx, tenantID, d.EndpointID, false)
		return err
	})
	if ErrorCode(err) == ENOTFOUND {
		// The endpoint was deleted, and its deliveries with it.
		return CallbackOutcome{}, nil
	}
	if err != nil || d.Status != CallbackPending {
		return CallbackOutcome{}, err
	}
	if !e.Enabled {
		return CallbackOutcome{}, c.record(ctx, e, CallbackAttempt{TenantID: tenantID, DeliveryID: d.ID, Status: CallbackFailed,
			Error: "not posted: the endpoint is disabled", At: c.Now()}, false)
	}
	secrets, err := c.open(e)
	if err != nil {
		return CallbackOutcome{}, fmt.Errorf("callback endpoint %s: %w", e.ID, err)
	}

	status, retryAfter, postErr := c.post(ctx, e, d, secrets)
	now := c.Now()
	a := CallbackAttempt{TenantID: tenantID, DeliveryID: d.ID, ResponseStatus: status, At: now}
	switch {
	case postErr == nil:
		a.Status = CallbackSucceeded
		return CallbackOutcome{}, c.record(ctx, e, a, true)
	case status == http.StatusGone:
		a.Status, a.Error, a.Posted = CallbackFailed, postErr.Error(), true
		return CallbackOutcome{}, c.gone(ctx, e, a)
	}
	a.Error = postErr.Error()
	backoff := c.Backoff
	if backoff == nil {
		backoff = DefaultCallbackBackoff
	}
	round := d.RoundAttempts + 1
	if round > len(backoff) {
		a.Status = CallbackFailed
		return CallbackOutcome{}, c.record(ctx, e, a, true)
	}
	wait := backoff[round-1]
	wait += time.Duration(mrand.Int64N(int64(wait)/10 + 1))
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && retryAfter > wait {
		wait = retryAfter
	}
	next := now.Add(wait)
	a.Status, a.NextAt = CallbackPending, &next
	if err := c.record(ctx, e, a, true); err != nil {
		return CallbackOutcome{}, err
	}
	return CallbackOutcome{Snooze: wait}, nil
}

// post makes one signed POST of d to e and returns the answer's status, its
// Retry-After, and an error unless the answer was 2xx.
func (c *Callbacks) post(ctx context.Context, e *CallbackEndpoint, d *CallbackDelivery, secrets map[string]string) (int, time.Duration, error) {
	now := c.Now()
	ts := now.Unix()
	sig, err := SignCallback(secrets[secretCurrent], d.WebhookID(), ts, d.Payload)
	if err != nil {
		return 0, 0, err
	}
	// During a rotation's grace period the old secret signs as well; the
	// receiver accepts whichever of the space-separated signatures it can
	// check.
	if prev := secrets[secretPrevious]; prev != "" && e.PreviousExpiresAt != nil && now.Before(*e.PreviousExpiresAt) {
		old, err := SignCallback(prev, d.WebhookID(), ts, d.Payload)
		if err != nil {
			return 0, 0, err
		}
		sig += " " + old
	}
	ctx, cancel := context.WithTimeout(ctx, CallbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", callbackUserAgent)
	req.Header.Set(HeaderWebhookID, d.WebhookID())
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, 0, errors.New(truncate(err.Error(), 300))
	}
	defer resp.Body.Close()
	// Only the status counts; a short excerpt of the body helps the tenant
	// see why, and a huge body must not hold the worker.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	msg := "HTTP " + strconv.Itoa(resp.StatusCode)
	if excerpt := strings.TrimSpace(string(body)); excerpt != "" && utf8.ValidString(excerpt) {
		msg += ": " + truncate(excerpt, 200)
	}
	return resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), now), errors.New(msg)
}

// record writes an attempt's result and the endpoint's health: a success
// ends its run of failures, a failure starts one or, when the run has
// lasted DisableAfter, disables the endpoint.
func (c *Callbacks) record(ctx context.Context, e *CallbackEndpoint, a CallbackAttempt, posted bool) error {
	a.Posted = posted
	return c.Store.InTenant(ctx, e.TenantID, func(tx CallbackTx) error {
		if !posted {
			_, err := tx.RecordCallbackAttempt(ctx, a)
			return err
		}
		ok, err := tx.RecordCallbackAttempt(ctx, a)
		if err != nil || !ok {
			return err
		}
		if a.Status == CallbackSucceeded {
			return tx.MarkCallbackEndpointHealthy(ctx, e.TenantID, e.ID)
		}
		since, err := tx.MarkCallbackEndpointFailing(ctx, e.TenantID, e.ID, a.At)
		if err != nil {
			return err
		}
		limit := c.DisableAfter
		if limit <= 0 {
			limit = DefaultCallbackDisableAfter
		}
		if a.At.Sub(since) < limit {
			return nil
		}
		return c.disable(ctx, tx, e, fmt.Sprintf("Every attempt since %s failed (the last: %s).", since.UTC().Format(time.RFC3339), a.Error))
	})
}

// gone records a 410 answer: the receiver wants no more posts, so the
// delivery fails and the endpoint is disabled until someone enables it.
func (c *Callbacks) gone(ctx context.Context, e *CallbackEndpoint, a CallbackAttempt) error {
	return c.Store.InTenant(ctx, e.TenantID, func(tx CallbackTx) error {
		ok, err := tx.RecordCallbackAttempt(ctx, a)
		if err != nil || !ok {
			return err
		}
		return c.disable(ctx, tx, e, "The endpoint answered 410 Gone: it no longer wants callbacks.")
	})
}

func (c *Callbacks) disable(ctx context.Context, tx CallbackTx, e *CallbackEndpoint, reason string) error {
	disabled, err := tx.DisableCallbackEndpoint(ctx, e.TenantID, e.ID, reason, c.Now())
	if err != nil || !disabled {
		return err
	}
	c.Log.WarnContext(ctx, "callback endpoint disabled", "tenant_id", e.TenantID, "callback_endpoint_id", e.ID, "reason", reason)
	return tx.InsertAudit(ctx, SystemActor.Entry(&e.TenantID, "callback_endpoint.disable", "callback_endpoint", e.ID.String(),
		map[string]any{"reason": reason}))
}

// parseRetryAfter reads Retry-After, delay-seconds or an HTTP date, as a
// wait from now; 0 when missing or malformed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return max(0, min(d, maxRetryAfter))
}
