package app

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// Public links answer without a login (a file's /f/ link, an e-mail's
// unsubscribe link), so their buckets count per client address and per
// file: a burst of PublicClientBurst requests from one client, then
// PublicClientRate a second; a burst of PublicFileBurst fetches of one
// file from everyone, then PublicFileRate a second. A person opens a
// ticket a few times; a client cycling made-up tokens, or everyone
// hammering one leaked link, waits.
//
// The figures leave room for what legitimately comes at once: Meta fetches
// a WhatsApp document sent by link from a handful of its own addresses,
// for every passenger of a broadcast, and one event-wide file (a trip's
// itinerary) is fetched once per passenger; mail providers post one-click
// unsubscribes from shared addresses.
const (
	PublicClientBurst = 300.0
	PublicClientRate  = 30.0
	PublicFileBurst   = 500.0
	PublicFileRate    = 10.0
)

// PublicBucketPrefix starts the key of every public link's bucket.
const PublicBucketPrefix = "public:"

// PublicLimits takes tokens for public links from the token buckets every
// process shares, as API keys' intake does (one statement per bucket).
type PublicLimits struct {
	Rates IntakeTokens
	// BucketNow is the clock buckets are read with; nil reads the
	// database's (see RateLimiter.Now).
	BucketNow Clock
	// ClientBurst, ClientRate, FileBurst and FileRate override the
	// defaults above when set.
	ClientBurst, ClientRate, FileBurst, FileRate float64
}

// TakeClient takes a token from the client address's bucket. An IPv6
// client is counted by its /64, which one subscriber usually holds whole.
func (l *PublicLimits) TakeClient(ctx context.Context, client string) error {
	if l == nil {
		return nil
	}
	key := client
	if a, err := netip.ParseAddr(client); err == nil {
		a = a.Unmap()
		if a.Is6() {
			key = netip.PrefixFrom(a, 64).Masked().String()
		} else {
			key = a.String()
		}
	}
	return l.take(ctx, PublicBucketPrefix+"client:"+key, orRate(l.ClientBurst, PublicClientBurst), orRate(l.ClientRate, PublicClientRate))
}

// TakeFile takes a token from the bucket of one file's link, across every
// client.
func (l *PublicLimits) TakeFile(ctx context.Context, f *Attachment) error {
	if l == nil {
		return nil
	}
	return l.take(ctx, PublicBucketPrefix+"file:"+f.TenantID.String()+":"+f.ID.String(), orRate(l.FileBurst, PublicFileBurst), orRate(l.FileRate, PublicFileRate))
}

func (l *PublicLimits) take(ctx context.Context, key string, burst, perSecond float64) error {
	var at time.Time
	if l.BucketNow != nil {
		at = l.BucketNow()
	}
	wait, err := l.Rates.TakeIntakeToken(ctx, key, burst, perSecond, at)
	if err != nil || wait <= 0 {
		return err
	}
	secs := time.Duration(math.Ceil(wait.Seconds())) * time.Second
	return &Error{Code: ETOOMANY, Reason: "rate_limited", RetryAfter: secs, Message: fmt.Sprintf(
		"Too many requests for this link; try again in %d s.", int(secs.Seconds()))}
}

func orRate(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}
