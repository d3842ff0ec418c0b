package app

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// ExpiryTx lists the statements the expiry sweep runs.
type ExpiryTx interface {
	Tx
	// ExpireEvents marks up to limit of the tenant's events not routed yet
	// whose expiry has passed EXPIRED and returns how many.
	ExpireEvents(ctx context.Context, tenantID uuid.UUID, now time.Time, limit int) (int, error)
	// ExpireMessages marks up to limit of the tenant's QUEUED messages past
	// their expiry, with no provider call in flight and no quota held,
	// EXPIRED, each with a timeline entry, and returns how many.
	ExpireMessages(ctx context.Context, tenantID uuid.UUID, now time.Time, limit int) (int, error)
}

// ExpireBatch is the most rows one expiry transaction changes.
const ExpireBatch = 1000

// ExpireOverdue is the one-minute expiry sweep (seed 003: PENDING to
// EXPIRED when the TTL passed): events still scheduled or awaiting approval
// and QUEUED messages (those waiting for quiet hours included) past their
// expiry become EXPIRED and are never sent. Their jobs find them no longer
// pending and do nothing. A message whose send is under way, or that holds
// its quota for a retry, is left to its dispatch job, which expires it the
// same way and gives the quota back. The tenants with something expired
// are found across tenants; each one's expiry is written in transactions
// of that tenant.
func (m *Maintenance) ExpireOverdue(ctx context.Context) (events, messages int, err error) {
	now := m.Now()
	err = m.sweepTenants(ctx, SweepExpiry, now, func(tx MaintenanceTx, tenant uuid.UUID) (bool, error) {
		ne, err := tx.ExpireEvents(ctx, tenant, now, ExpireBatch)
		if err != nil {
			return false, err
		}
		nm, err := tx.ExpireMessages(ctx, tenant, now, ExpireBatch)
		if err != nil {
			return false, err
		}
		events, messages = events+ne, messages+nm
		return ne == ExpireBatch || nm == ExpireBatch, nil
	})
	if events+messages > 0 {
		m.Log.InfoContext(ctx, "expired before they were sent", "events", events, "messages", messages)
	}
	return events, messages, err
}
