package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// phoneRegion reports whether code is a region phone numbers belong to.
func phoneRegion(code string) bool { return phonenumbers.GetSupportedRegions()[code] }

// smsRecipient is one recipient of a request that may get an SMS.
type smsRecipient struct {
	index         int
	phone, region string
}

// limitCheck is what intake counts of one request against the tenant's
// limits.
type limitCheck struct {
	// perChannel is the messages the request may send on each channel.
	perChannel map[Channel]int
	sms        []smsRecipient
}

// countRequest counts what intake can know of a request's messages before
// routing: for each channel it routes to (RouteChannels), the recipients
// that have an address for it (a phone for WhatsApp and SMS, an e-mail for
// e-mail); a recipient known only by its passenger profile counts on every
// channel, since its stored contact may have any address. A fallback chain
// counts on each of its channels, since intake cannot know which one will
// deliver: a cap is an upper bound, never exceeded. An audience's
// passengers are not known until routing and count nothing here.
func countRequest(in *intakeRequest) limitCheck {
	chs, _ := RouteChannels(in.event, in.def)
	c := limitCheck{perChannel: map[Channel]int{}}
	for _, ch := range slices.Compact(slices.Sorted(slices.Values(chs))) {
		for i, r := range in.req.Recipients {
			unknown := r.Phone == "" && r.Email == ""
			switch {
			case ch == Email && (r.Email != "" || unknown),
				(ch == SMS || ch == WhatsApp) && (r.Phone != "" || unknown),
				ch == Webhook:
				c.perChannel[ch]++
			default:
				continue
			}
			if ch == SMS && r.Phone != "" {
				c.sms = append(c.sms, smsRecipient{index: i, phone: r.Phone, region: regionOf(r.Phone)})
			}
		}
	}
	return c
}

// regionOf is the ISO 3166 region of an E.164 number, or "" when the
// number belongs to none (a non-geographic number).
func regionOf(phone string) string {
	num, err := phonenumbers.Parse(phone, "")
	if err != nil {
		return ""
	}
	return phonenumbers.GetRegionCodeForNumber(num)
}

// checkLimits takes the request's counts from the tenant's day counters,
// in intake's transaction after its event is inserted, with one statement
// that also reads the tenant's settings: a refusal rolls the event back, so
// a refused request stores nothing, and a repeated request (answered from
// the stored event) never counts twice. SMS to a country the tenant does
// not send to is EINVALID sms_country_not_allowed; a cap that would be
// passed is ETOOMANY naming it, with the time until the tenant's day's
// counters start over.
func checkLimits(ctx context.Context, tx IntakeTx, in *intakeRequest) error {
	c := countRequest(in)
	if len(c.perChannel) == 0 {
		return nil
	}
	tenantID := in.key.TenantID
	t, err := keyTenant(ctx, tx, in.key)
	if err != nil {
		return err
	}
	home := TenantCountry(t)
	takes, fields := []DayTake{}, map[string]string{}
	for ch, n := range c.perChannel {
		takes = append(takes, DayTake{Counter: counterChannel + string(ch), N: n, Setting: dailySetting(ch), Default: DefaultDailyCaps[ch]})
		fields[counterChannel+string(ch)] = "recipients"
	}
	perNumber, international := map[string]int{}, 0
	for _, r := range c.sms {
		field := fmt.Sprintf("recipients[%d].phone", r.index)
		if r.region != home {
			international++
			if _, ok := fields[counterInternational]; !ok {
				fields[counterInternational] = field
			}
		}
		key := CounterSMSRecipient + numberHash(tenantID.String(), r.phone)
		if perNumber[key]++; perNumber[key] == 1 {
			fields[key] = field
		}
	}
	if international > 0 {
		takes = append(takes, DayTake{Counter: counterInternational, N: international, Setting: settingInternational, Default: DefaultSMSInternationalDaily})
	}
	for key, n := range perNumber {
		takes = append(takes, DayTake{Counter: key, N: n, Setting: settingRecipient, Default: DefaultSMSRecipientDaily})
	}
	// One order for every request, so that two requests never wait for
	// each other's counter rows in opposite orders.
	sort.Slice(takes, func(i, j int) bool { return takes[i].Counter < takes[j].Counter })
	set, refused, err := tx.TakeDayCounts(ctx, tenantID, DayOf(in.now, t.Timezone), takes)
	if err != nil {
		return err
	}
	// The counters were taken before the countries are checked: a refusal
	// rolls them back with the event.
	l := set.Effective(t)
	for _, r := range c.sms {
		if !slices.Contains(l.SMSCountries, r.region) {
			return &Error{Code: EINVALID, Reason: ReasonSMSCountry, Field: fmt.Sprintf("recipients[%d].phone", r.index),
				Message: countryRefusal(r.region, l)}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return limitRefusal(takes, refused, fields, l, in.now, t.Timezone)
}

// keyTenant is the tenant of an API key as limits need it: its locale and
// time zone, which authentication read with the key; a key that did not
// come through authentication has them read.
func keyTenant(ctx context.Context, tx IntakeTx, key *APIKey) (*Tenant, error) {
	if key.TenantTimezone != "" {
		return &Tenant{ID: key.TenantID, DefaultLocale: key.TenantLocale, Timezone: key.TenantTimezone}, nil
	}
	return tx.TenantByID(ctx, key.TenantID)
}

// Reasons of SMS the destination rules refuse: intake's error codes, and
// the failed reasons of messages routing refuses.
const (
	ReasonSMSCountry       = "sms_country_not_allowed"
	ReasonSMSInternational = "sms_international_limit_exceeded"
	ReasonSMSRecipient     = "sms_recipient_limit_exceeded"
)

func countryRefusal(region string, l *Limits) string {
	return fmt.Sprintf("SMS to %s (%s) are not allowed for this tenant; it sends SMS to %v. An operator can allow more countries.",
		CountryName(region), region, l.SMSCountries)
}

// limitRefusal is the error of the first refused take, in take order
// (channel caps, then international SMS, then a number's SMS).
func limitRefusal(takes []DayTake, refused []string, fields map[string]string, l *Limits, now time.Time, tz string) error {
	for _, tk := range takes {
		if !slices.Contains(refused, tk.Counter) {
			continue
		}
		e := &Error{Code: ETOOMANY, Field: fields[tk.Counter], RetryAfter: untilTomorrow(now, tz)}
		e.Reason, e.Message = capRefusal(tk, l, tz)
		return e
	}
	return fmt.Errorf("day counters refused %v, which the request did not take", refused)
}

// capRefusal is the reason and text of a cap a take would pass.
func capRefusal(tk DayTake, l *Limits, tz string) (reason, text string) {
	limit := tk.capOf(l)
	switch tk.Setting {
	case settingInternational:
		return ReasonSMSInternational, fmt.Sprintf(
			"This would pass the tenant's daily cap of %d SMS to numbers abroad; the cap starts over at midnight (%s).", limit, tz)
	case settingRecipient:
		return ReasonSMSRecipient, fmt.Sprintf(
			"This number would get more than %d SMS today, the tenant's cap per number; it starts over at midnight (%s).", limit, tz)
	}
	return "daily_limit_exceeded", fmt.Sprintf("This request would pass the tenant's daily cap of %d %s messages (it counts %d); the cap starts over at midnight (%s).",
		limit, tk.Counter[len(counterChannel):], tk.N, tz)
}

// numberHash names a phone number in the tenant's day counters without
// keeping it.
func numberHash(tenant, phone string) string {
	sum := sha256.Sum256([]byte(tenant + "/" + phone))
	return hex.EncodeToString(sum[:12])
}
