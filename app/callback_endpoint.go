package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// CallbackEndpointInput is a new endpoint as a person or a key asks for it.
type CallbackEndpointInput struct {
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
}

// CallbackEndpointUpdate changes the fields that are set and leaves the
// others.
type CallbackEndpointUpdate struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	Enabled     *bool     `json:"enabled"`
}

// CallbackDeliveryLimit is how many of an endpoint's latest deliveries its
// log shows.
const CallbackDeliveryLimit = 100

// secrets of an endpoint, sealed together.
const (
	secretCurrent  = "current"
	secretPrevious = "previous"
)

// List returns the tenant's callback endpoints, oldest first.
func (c *Callbacks) List(ctx context.Context, tenantID uuid.UUID) ([]*CallbackEndpoint, error) {
	var es []*CallbackEndpoint
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		es, err = tx.CallbackEndpoints(ctx, tenantID)
		return err
	})
	return es, err
}

// Get returns one of the tenant's endpoints (ENOTFOUND for another's).
func (c *Callbacks) Get(ctx context.Context, tenantID, id uuid.UUID) (*CallbackEndpoint, error) {
	var e *CallbackEndpoint
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		e, err = tx.CallbackEndpointByID(ctx, tenantID, id, false)
		return err
	})
	return e, err
}

// Create stores a new endpoint with a fresh signing secret, which it
// returns: the only time anyone sees it.
func (c *Callbacks) Create(ctx context.Context, actor Actor, tenantID uuid.UUID, in CallbackEndpointInput) (*CallbackEndpoint, string, error) {
	url, urlErr := c.checkURL(in.URL)
	types, typesErr := checkEventTypes(in.EventTypes)
	desc, descErr := checkDescription(in.Description)
	var p problems
	for _, err := range []*Error{urlErr, typesErr, descErr} {
		if err != nil {
			p.add(err)
		}
	}
	if err := p.err(); err != nil {
		return nil, "", err
	}
	now := c.Now()
	e := &CallbackEndpoint{
		ID: uuid.New(), TenantID: tenantID, URL: url, Description: desc, EventTypes: types, Enabled: in.Enabled == nil || *in.Enabled,
		CreatedBy: actor.Label, CreatedAt: now, UpdatedAt: now,
	}
	secret := NewCallbackSecret()
	if err := c.seal(e, secret, ""); err != nil {
		return nil, "", err
	}
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) error {
		if err := tx.InsertCallbackEndpoint(ctx, e); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_endpoint.create", "callback_endpoint", e.ID.String(),
			map[string]any{"url": e.URL, "event_types": []string(e.EventTypes), "enabled": e.Enabled}))
	})
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

// Update changes an endpoint's URL, description, event types or whether it
// is enabled. Enabling an endpoint Herald disabled starts it afresh.
func (c *Callbacks) Update(ctx context.Context, actor Actor, tenantID, id uuid.UUID, in CallbackEndpointUpdate) (*CallbackEndpoint, error) {
	var p problems
	var url, desc string
	var types []string
	if in.URL != nil {
		var err *Error
		if url, err = c.checkURL(*in.URL); err != nil {
			p.add(err)
		}
	}
	if in.EventTypes != nil {
		var err *Error
		if types, err = checkEventTypes(*in.EventTypes); err != nil {
			p.add(err)
		}
	}
	if in.Description != nil {
		var err *Error
		if desc, err = checkDescription(*in.Description); err != nil {
			p.add(err)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	var e *CallbackEndpoint
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		e, err = tx.CallbackEndpointByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		changed := map[string]any{}
		if in.URL != nil && url != e.URL {
			e.URL, changed["url"] = url, url
		}
		if in.Description != nil && desc != e.Description {
			e.Description, changed["description"] = desc, desc
		}
		if in.EventTypes != nil && !slices.Equal(types, e.EventTypes) {
			e.EventTypes, changed["event_types"] = types, types
		}
		if in.Enabled != nil && *in.Enabled != e.Enabled {
			e.Enabled, changed["enabled"] = *in.Enabled, *in.Enabled
			e.DisabledReason, e.FailingSince = nil, nil
			if !e.Enabled {
				reason := "Disabled by " + actor.Label + "."
				e.DisabledReason = &reason
			}
		}
		if len(changed) == 0 {
			return nil
		}
		e.UpdatedAt = c.Now()
		if err := tx.UpdateCallbackEndpoint(ctx, e); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_endpoint.update", "callback_endpoint", e.ID.String(), changed))
	})
	return e, err
}

// Delete removes an endpoint with its delivery log; deliveries not posted
// yet are dropped.
func (c *Callbacks) Delete(ctx context.Context, actor Actor, tenantID, id uuid.UUID) error {
	return c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) error {
		e, err := tx.CallbackEndpointByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		if err := tx.DeleteCallbackEndpoint(ctx, tenantID, id); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_endpoint.delete", "callback_endpoint", id.String(),
			map[string]any{"url": e.URL}))
	})
}

// RotateSecret gives the endpoint a new signing secret, which it returns
// (shown once). The secret it replaces keeps signing, next to the new one,
// for the grace period, so the receiver can switch without losing a post;
// a secret that was still in its grace period stops signing at once.
func (c *Callbacks) RotateSecret(ctx context.Context, actor Actor, tenantID, id uuid.UUID) (*CallbackEndpoint, string, error) {
	secret := NewCallbackSecret()
	var e *CallbackEndpoint
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		e, err = tx.CallbackEndpointByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		old, err := c.open(e)
		if err != nil {
			return err
		}
		now := c.Now()
		if err := c.seal(e, secret, old[secretCurrent]); err != nil {
			return err
		}
		expires := now.Add(c.grace())
		e.PreviousExpiresAt, e.UpdatedAt = &expires, now
		if err := tx.UpdateCallbackEndpoint(ctx, e); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_endpoint.rotate_secret", "callback_endpoint", e.ID.String(),
			map[string]any{"previous_secret_expires_at": expires}))
	})
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

// Deliveries returns the endpoint's latest deliveries, newest first.
func (c *Callbacks) Deliveries(ctx context.Context, tenantID, endpointID uuid.UUID) (*CallbackEndpoint, []*CallbackDelivery, error) {
	var e *CallbackEndpoint
	var ds []*CallbackDelivery
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		if e, err = tx.CallbackEndpointByID(ctx, tenantID, endpointID, false); err != nil {
			return err
		}
		ds, err = tx.CallbackDeliveries(ctx, tenantID, endpointID, CallbackDeliveryLimit)
		return err
	})
	return e, ds, err
}

// Replay posts a finished delivery again: the same payload under the same
// webhook-id, so a receiver that processed it already can tell, with a
// fresh round of retries. A delivery still pending is being posted already
// (ECONFLICT), and a disabled endpoint must be enabled first.
func (c *Callbacks) Replay(ctx context.Context, actor Actor, tenantID, endpointID, deliveryID uuid.UUID) (*CallbackDelivery, error) {
	var d *CallbackDelivery
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		e, err := tx.CallbackEndpointByID(ctx, tenantID, endpointID, false)
		if err != nil {
			return err
		}
		if d, err = tx.CallbackDeliveryByID(ctx, tenantID, deliveryID); err != nil {
			return err
		}
		if d.EndpointID != e.ID {
			return Errorf(ENOTFOUND, "Delivery %s not found.", deliveryID)
		}
		if !e.Enabled {
			return Errorf(ECONFLICT, "The endpoint is disabled; enable it before replaying a delivery.")
		}
		restarted, err := tx.RestartCallbackDelivery(ctx, tenantID, deliveryID, c.Now())
		if err != nil {
			return err
		}
		if !restarted {
			return Errorf(ECONFLICT, "The delivery is still being attempted; replay it once it succeeded or failed.")
		}
		d.Status = CallbackPending
		if err := c.Queue.EnqueueCallbacks(ctx, tx, tenantID, deliveryID); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_delivery.replay", "callback_delivery", deliveryID.String(),
			map[string]any{"endpoint_id": endpointID.String(), "event_type": d.EventType}))
	})
	return d, err
}

// SendTest posts a callback.test event to the endpoint, whatever it
// subscribes to, so the tenant can check its receiver and signature check.
func (c *Callbacks) SendTest(ctx context.Context, actor Actor, tenantID, endpointID uuid.UUID) (*CallbackDelivery, error) {
	var d *CallbackDelivery
	err := c.Store.InTenant(ctx, tenantID, func(tx CallbackTx) (err error) {
		e, err := tx.CallbackEndpointByID(ctx, tenantID, endpointID, false)
		if err != nil {
			return err
		}
		if !e.Enabled {
			return Errorf(ECONFLICT, "The endpoint is disabled; enable it before sending a test event.")
		}
		now := c.Now()
		payload, err := json.Marshal(CallbackPayload{Type: CallbackTest, Timestamp: now.UTC(), Data: map[string]any{
			"endpoint_id": e.ID, "message": "A test event from Herald: your endpoint receives and verifies status callbacks.",
		}})
		if err != nil {
			return err
		}
		ids, err := tx.InsertCallbackDeliveries(ctx, tenantID, []uuid.UUID{e.ID}, nil, CallbackTest, payload, now)
		if err != nil {
			return err
		}
		if d, err = tx.CallbackDeliveryByID(ctx, tenantID, ids[0]); err != nil {
			return err
		}
		if err := c.Queue.EnqueueCallbacks(ctx, tx, tenantID, d.ID); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "callback_endpoint.test", "callback_endpoint", e.ID.String(),
			map[string]any{"delivery_id": d.ID.String()}))
	})
	return d, err
}

func (c *Callbacks) checkURL(raw string) (string, *Error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", FieldErrorf("url", "The URL is required.")
	}
	if len(raw) > 2048 {
		return "", FieldErrorf("url", "The URL is longer than 2048 characters.")
	}
	if c.CheckURLFunc != nil {
		if err := c.CheckURLFunc(raw); err != nil {
			return "", FieldErrorf("url", "%s", strings.ReplaceAll(err.Error(), "webhook", "callback"))
		}
	}
	return raw, nil
}

func checkEventTypes(in []string) ([]string, *Error) {
	if len(in) == 0 {
		return nil, FieldErrorf("event_types", "Choose at least one event type (%s).", strings.Join(CallbackEventTypes, ", "))
	}
	var out []string
	for _, t := range in {
		t = strings.TrimSpace(t)
		if !slices.Contains(CallbackEventTypes, t) {
			return nil, FieldErrorf("event_types", "%q is not an event type; choose from %s.", t, strings.Join(CallbackEventTypes, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	// Stored in the one order forms show them, so equal sets compare equal.
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(CallbackEventTypes, a) - slices.Index(CallbackEventTypes, b)
	})
	return out, nil
}

func checkDescription(s string) (string, *Error) {
	s = strings.TrimSpace(s)
	if len([]rune(s)) > 200 {
		return "", FieldErrorf("description", "The description must be at most 200 characters.")
	}
	return s, nil
}

func (c *Callbacks) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return DefaultCallbackGrace
}

// seal stores current (and previous, when set) as e's sealed secrets.
func (c *Callbacks) seal(e *CallbackEndpoint, current, previous string) error {
	secrets := map[string]string{secretCurrent: current}
	if previous != "" {
		secrets[secretPrevious] = previous
	}
	sealed, keyID, err := c.Sealer.Seal(e.TenantID, e.ID, secrets)
	if err != nil {
		return err
	}
	e.Secrets, e.SecretsKeyID = sealed, keyID
	return nil
}

func (c *Callbacks) open(e *CallbackEndpoint) (map[string]string, error) {
	return c.Sealer.Open(e.TenantID, e.ID, e.SecretsKeyID, e.Secrets)
}
