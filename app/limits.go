package app

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Limits are what a tenant may send through intake, after defaults: the
// requests a minute per API key, the messages a day per channel, and the
// SMS destination rules that stop SMS pumping (a public form that sends a
// code to any number, used to run up traffic to premium numbers abroad).
type Limits struct {
	// IntakePerMinute is each API key's token bucket: this many requests
	// at once, refilled at this many a minute.
	IntakePerMinute int `json:"intake_per_minute"`
	// Daily caps the messages a day per channel that intake accepts; a
	// day is the tenant's, in its time zone.
	Daily map[Channel]int `json:"daily"`
	// SMSCountries are the ISO 3166 regions SMS may go to.
	SMSCountries []string `json:"sms_countries"`
	// SMSInternationalDaily caps the SMS a day to numbers outside the
	// tenant's country; SMSRecipientDaily the SMS a day to one number.
	SMSInternationalDaily int `json:"sms_international_daily"`
	SMSRecipientDaily     int `json:"sms_recipient_daily"`
	// MaxSMSParts is the longest SMS, in parts (CountSMS), that a
	// template may be saved with and a message may be sent with.
	MaxSMSParts int `json:"max_sms_parts"`
}

// Default limits: generous enough that no honest tenant meets them, tight
// enough that a leaked key or an abused public form costs a day's cap, not
// a fortune. A tenant's own settings (set by an operator) replace them.
const (
	DefaultIntakePerMinute       = 3000
	DefaultSMSInternationalDaily = 100
	DefaultSMSRecipientDaily     = 10
)

// DefaultDailyCaps are the messages a day per channel a tenant's intake
// accepts unless an operator set its own.
var DefaultDailyCaps = map[Channel]int{Email: 20000, WhatsApp: 10000, SMS: 1000, Webhook: 50000}

// EUCountries are the member states of the European Union, which SMS may
// go to by default besides the tenant's own country.
var EUCountries = []string{"AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE",
	"IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK"}

// LimitSettings are an operator's settings of one tenant's limits; a nil
// field means the default.
type LimitSettings struct {
	TenantID              uuid.UUID  `db:"tenant_id"`
	IntakePerMinute       *int       `db:"intake_per_minute"`
	DailyEmail            *int       `db:"daily_email"`
	DailySMS              *int       `db:"daily_sms"`
	DailyWhatsApp         *int       `db:"daily_whatsapp"`
	DailyWebhook          *int       `db:"daily_webhook"`
	SMSCountries          StringList `db:"sms_countries"`
	SMSInternationalDaily *int       `db:"sms_international_daily"`
	SMSRecipientDaily     *int       `db:"sms_recipient_daily"`
	MaxSMSParts           *int       `db:"max_sms_parts"`
	// Budget* are the monthly budgets of a channel, nil for none.
	BudgetEmail    *Money    `db:"budget_email"`
	BudgetSMS      *Money    `db:"budget_sms"`
	BudgetWhatsApp *Money    `db:"budget_whatsapp"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// Effective returns the tenant's limits: its settings where set, the
// defaults elsewhere. The default SMS countries are the tenant's country
// (TenantCountry) and the EU.
func (s *LimitSettings) Effective(t *Tenant) *Limits {
	l := &Limits{
		IntakePerMinute:       orDefault(s.IntakePerMinute, DefaultIntakePerMinute),
		SMSInternationalDaily: orDefault(s.SMSInternationalDaily, DefaultSMSInternationalDaily),
		SMSRecipientDaily:     orDefault(s.SMSRecipientDaily, DefaultSMSRecipientDaily),
		MaxSMSParts:           orDefault(s.MaxSMSParts, DefaultMaxSMSParts),
		Daily: map[Channel]int{
			Email:    orDefault(s.DailyEmail, DefaultDailyCaps[Email]),
			SMS:      orDefault(s.DailySMS, DefaultDailyCaps[SMS]),
			WhatsApp: orDefault(s.DailyWhatsApp, DefaultDailyCaps[WhatsApp]),
			Webhook:  orDefault(s.DailyWebhook, DefaultDailyCaps[Webhook]),
		},
	}
	if s.SMSCountries != nil {
		l.SMSCountries = slices.Clone([]string(s.SMSCountries))
	} else {
		l.SMSCountries = append([]string{}, EUCountries...)
		if c := TenantCountry(t); c != "" && !slices.Contains(l.SMSCountries, c) {
			l.SMSCountries = append(l.SMSCountries, c)
		}
		slices.Sort(l.SMSCountries)
	}
	return l
}

func orDefault(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// LimitInput is an operator's change of a tenant's limits as typed: an
// empty field restores the default.
type LimitInput struct {
	IntakePerMinute, DailyEmail, DailySMS, DailyWhatsApp, DailyWebhook string
	// SMSCountries lists ISO 3166 codes separated by commas or spaces.
	SMSCountries                             string
	SMSInternationalDaily, SMSRecipientDaily string
	MaxSMSParts                              string
	// Budgets per month, as amounts ("250.00"); empty for none.
	BudgetEmail, BudgetSMS, BudgetWhatsApp string
}

// Settings validates the input and returns the settings it sets; the
// error names the first field at fault.
func (in LimitInput) Settings(tenantID uuid.UUID) (*LimitSettings, error) {
	s := &LimitSettings{TenantID: tenantID}
	fields := []struct {
		name, raw string
		dst       **int
		min, max  int
	}{
		{"intake_per_minute", in.IntakePerMinute, &s.IntakePerMinute, 1, 1000000},
		{"daily_email", in.DailyEmail, &s.DailyEmail, 0, 100000000},
		{"daily_sms", in.DailySMS, &s.DailySMS, 0, 100000000},
		{"daily_whatsapp", in.DailyWhatsApp, &s.DailyWhatsApp, 0, 100000000},
		{"daily_webhook", in.DailyWebhook, &s.DailyWebhook, 0, 100000000},
		{"sms_international_daily", in.SMSInternationalDaily, &s.SMSInternationalDaily, 0, 100000000},
		{"sms_recipient_daily", in.SMSRecipientDaily, &s.SMSRecipientDaily, 0, 100000},
		{"max_sms_parts", in.MaxSMSParts, &s.MaxSMSParts, 1, MaxSMSPartsCeiling},
	}
	for _, f := range fields {
		raw := strings.ReplaceAll(strings.TrimSpace(f.raw), ",", "")
		if raw == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(raw, &n); err != nil || fmt.Sprint(n) != raw || n < f.min || n > f.max {
			return nil, Invalid("invalid_limit", f.name, "%s must be a whole number from %d to %d (leave it empty for the default).", f.name, f.min, f.max)
		}
		*f.dst = &n
	}
	budgets := []struct {
		name, raw string
		dst       **Money
	}{{"budget_email", in.BudgetEmail, &s.BudgetEmail}, {"budget_sms", in.BudgetSMS, &s.BudgetSMS}, {"budget_whatsapp", in.BudgetWhatsApp, &s.BudgetWhatsApp}}
	for _, b := range budgets {
		if strings.TrimSpace(b.raw) == "" {
			continue
		}
		m, err := ParseMoney(b.name, b.raw, MaxBudget)
		if err != nil {
			return nil, err
		}
		*b.dst = &m
	}
	if raw := strings.TrimSpace(in.SMSCountries); raw != "" {
		codes := strings.FieldsFunc(strings.ToUpper(raw), func(r rune) bool { return r == ',' || r == ' ' || r == ';' || r == '\n' || r == '\r' || r == '\t' })
		for _, c := range codes {
			if !phoneRegion(c) {
				return nil, Invalid("invalid_country", "sms_countries", "%q is not a country code Herald knows numbers of (ISO 3166, such as DE or GB).", c)
			}
		}
		slices.Sort(codes)
		s.SMSCountries = StringList(slices.Compact(codes))
	}
	return s, nil
}

// LimitTx lists the statements limits run, in intake's and routing's
// transactions and on their own.
type LimitTx interface {
	Tx
	// LimitSettings returns the tenant's settings; a tenant without any
	// has an empty row (every field the default).
	LimitSettings(ctx context.Context, tenantID uuid.UUID) (*LimitSettings, error)
	// TakeDayCounts reads the tenant's settings and adds each take's N to
	// its counter of the tenant's day, each only where the count stays
	// within the cap the settings give it, in one statement; it returns
	// the settings and the counters it could not take.
	TakeDayCounts(ctx context.Context, tenantID uuid.UUID, day time.Time, takes []DayTake) (set *LimitSettings, refused []string, err error)
}

// LimitAdminTx lists the statements reading and setting limits run.
type LimitAdminTx interface {
	LimitTx
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	// DayCounts returns the tenant's counters of the day, by counter,
	// with the per-number SMS counters folded into their highest.
	DayCounts(ctx context.Context, tenantID uuid.UUID, day time.Time) (map[string]int, error)
	SetLimitSettings(ctx context.Context, s *LimitSettings) error
	// LimitRefusals counts the tenant's requests refused since a time
	// with one of the codes, by code.
	LimitRefusals(ctx context.Context, tenantID uuid.UUID, since time.Time, codes []string) (map[string]int, error)
	// MonthSpent returns the cost the tenant's sends of the month reserved,
	// per channel.
	MonthSpent(ctx context.Context, tenantID uuid.UUID, month time.Time) (map[Channel]Money, error)
	ListTenants(ctx context.Context) ([]*Tenant, error)
	// PruneDayCounts deletes up to limit day counters of days before the
	// yesterday each tenant has at now (in its time zone), across tenants.
	PruneDayCounts(ctx context.Context, now time.Time, limit int) (int, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// DayTake is one counter a request takes from: N more, up to the cap the
// tenant's setting (a LimitSettings column) gives, or Default where the
// tenant has none.
type DayTake struct {
	Counter, Setting string
	N, Default       int
}

// Settings of the day caps, as DayTake names them.
const (
	settingInternational = "sms_international_daily"
	settingRecipient     = "sms_recipient_daily"
)

// dailySetting is the setting of a channel's daily cap.
func dailySetting(ch Channel) string { return "daily_" + strings.ToLower(string(ch)) }

// capOf is the cap a take counted against, as l gives it.
func (tk DayTake) capOf(l *Limits) int {
	switch tk.Setting {
	case settingInternational:
		return l.SMSInternationalDaily
	case settingRecipient:
		return l.SMSRecipientDaily
	}
	return l.Daily[Channel(strings.ToUpper(strings.TrimPrefix(tk.Setting, "daily_")))]
}

// Day counters.
const (
	counterChannel       = "channel:"
	counterInternational = "sms:international"
	// CounterSMSRecipient prefixes the per-number SMS counters; DayCounts
	// answers the day's busiest number under it alone.
	CounterSMSRecipient = "sms:to:"
)

// DayOf is the day counters count in: the date at has in the tenant's
// time zone (UTC when the zone is unknown), so that a day is the
// operator's day. The date is returned as midnight UTC of that date.
func DayOf(at time.Time, tz string) time.Time {
	y, m, d := at.In(zoneOf(tz)).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// zoneOf loads a tenant's time zone; tenants' zones are validated when
// they are set, so UTC stands only for a zone this build lacks.
func zoneOf(tz string) *time.Location {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

// untilTomorrow is how long from at until the tenant's day's counters
// start over at its midnight, rounded up to whole seconds.
func untilTomorrow(at time.Time, tz string) time.Duration {
	loc := zoneOf(tz)
	y, m, d := at.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc).Sub(at).Round(time.Second) + time.Second
}

// IntakeLimits runs the limits outside intake's transaction: each API
// key's token bucket, and the tenant's and operator's view and settings.
type IntakeLimits struct {
	Store Store[LimitAdminTx]
	// Rates holds the buckets, shared by every process.
	Rates IntakeTokens
	// BucketNow is the clock buckets are read with; nil reads the
	// database's (see RateLimiter.Now).
	BucketNow Clock
	Now       Clock
	// Currency is HERALD_CURRENCY, which budgets are in.
	Currency string
	// CacheTTL is how long a process trusts the settings it read for a
	// tenant's bucket, as it trusts an authenticated API key
	// (HERALD_API_KEY_CACHE_TTL): an operator's change reaches another
	// process's bucket within it, and this process's at once (Set). 0
	// reads them for every request.
	CacheTTL time.Duration
	// cache holds uuid.UUID -> cachedLimits.
	cache sync.Map
}

// IntakeTokens takes tokens from the intake buckets every process shares.
type IntakeTokens interface {
	// TakeIntakeToken takes one token at time at (zero: the store's own
	// clock) in one statement and returns 0, or returns how long until a
	// token will be there.
	TakeIntakeToken(ctx context.Context, key string, capacity, perSecond float64, at time.Time) (time.Duration, error)
}

// cachedLimits is a tenant's settings as a process read them, and when.
type cachedLimits struct {
	set *LimitSettings
	at  time.Time
}

// bucketSettings returns the tenant's settings for its bucket: from the
// cache while CacheTTL has not passed, else read, in a transaction of
// their own (the bucket is taken before intake's transaction begins).
func (s *IntakeLimits) bucketSettings(ctx context.Context, tenantID uuid.UUID) (*LimitSettings, error) {
	now := s.Now()
	if c, ok := s.cache.Load(tenantID); ok && s.CacheTTL > 0 && now.Sub(c.(cachedLimits).at) < s.CacheTTL {
		return c.(cachedLimits).set, nil
	}
	var set *LimitSettings
	err := s.Store.InTenant(ctx, tenantID, func(tx LimitAdminTx) (err error) {
		set, err = tx.LimitSettings(ctx, tenantID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.CacheTTL > 0 {
		s.cache.Store(tenantID, cachedLimits{set: set, at: now})
	}
	return set, nil
}

// TakeIntakeToken takes one token from the bucket of the key's tenant and
// key, before the request's body is read. A key without a token gets
// ETOOMANY rate_limited, with how long until one is there.
func (s *IntakeLimits) TakeIntakeToken(ctx context.Context, key *APIKey) error {
	set, err := s.bucketSettings(ctx, key.TenantID)
	if err != nil {
		return err
	}
	perMinute := float64(orDefault(set.IntakePerMinute, DefaultIntakePerMinute))
	var at time.Time
	if s.BucketNow != nil {
		at = s.BucketNow()
	}
	wait, err := s.Rates.TakeIntakeToken(ctx, "intake:"+key.TenantID.String()+":"+key.ID.String(), perMinute, perMinute/60, at)
	if err != nil || wait <= 0 {
		return err
	}
	secs := time.Duration(math.Ceil(wait.Seconds())) * time.Second
	return &Error{Code: ETOOMANY, Reason: "rate_limited", RetryAfter: secs, Message: fmt.Sprintf(
		"This API key sent more than %d requests a minute; try again in %d s. An operator can raise the limit.", int(perMinute), int(secs.Seconds()))}
}

// LimitUsage is a tenant's limits with what its day used of them.
type LimitUsage struct {
	Limits *Limits `json:"limits"`
	// Day is the day Used counts, in the tenant's time zone Timezone.
	Day      string `json:"day"`
	Timezone string `json:"timezone"`
	Used     struct {
		Daily            map[Channel]int `json:"daily"`
		SMSInternational int             `json:"sms_international"`
		// SMSBusiestRecipient is the most SMS any one number got today.
		SMSBusiestRecipient int `json:"sms_busiest_recipient"`
	} `json:"used"`
	// Custom is true when an operator set any of the tenant's limits.
	Custom bool `json:"custom"`
	// Budgets are the month's budgets and spend per priced channel
	// (GET /api/v1/budgets serves them).
	Budgets []BudgetUse `json:"-"`
}

// BudgetUse is a channel's monthly budget, what the month's sends cost of
// it so far, and what remains; Budget and Remaining are nil without a
// budget. Amounts are decimal strings in Currency.
type BudgetUse struct {
	Channel   Channel `json:"channel"`
	Budget    *string `json:"budget"`
	Spent     string  `json:"spent"`
	Remaining *string `json:"remaining"`
	// Month is the calendar month (UTC) the spend counts, "2026-11".
	Month    string `json:"month"`
	Currency string `json:"currency"`
	// Over is true when nothing more of the budget can be spent.
	Over bool `json:"-"`
}

// Usage returns the tenant's limits and its day's usage.
func (s *IntakeLimits) Usage(ctx context.Context, tenantID uuid.UUID) (*LimitUsage, error) {
	var u *LimitUsage
	err := s.Store.InTenant(ctx, tenantID, func(tx LimitAdminTx) error {
		t, err := tx.TenantByID(ctx, tenantID)
		if err != nil {
			return err
		}
		u, err = s.usage(ctx, tx, t)
		return err
	})
	return u, err
}

// usage reads the tenant's limits and its day's usage in tx.
func (s *IntakeLimits) usage(ctx context.Context, tx LimitAdminTx, t *Tenant) (*LimitUsage, error) {
	day := DayOf(s.Now(), t.Timezone)
	u := &LimitUsage{Day: day.Format(time.DateOnly), Timezone: t.Timezone}
	set, err := tx.LimitSettings(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	u.Limits, u.Custom = set.Effective(t), set.custom()
	counts, err := tx.DayCounts(ctx, t.ID, day)
	if err != nil {
		return nil, err
	}
	u.Used.Daily = map[Channel]int{}
	for ch := range u.Limits.Daily {
		u.Used.Daily[ch] = counts[counterChannel+string(ch)]
	}
	u.Used.SMSInternational, u.Used.SMSBusiestRecipient = counts[counterInternational], counts[CounterSMSRecipient]
	month := MonthOf(s.Now())
	spent, err := tx.MonthSpent(ctx, t.ID, month)
	if err != nil {
		return nil, err
	}
	for _, ch := range PricedChannels {
		b := BudgetUse{Channel: ch, Spent: spent[ch].String(), Month: month.Format("2006-01"), Currency: s.Currency}
		if budget := set.Budget(ch); budget != nil {
			left := max(*budget-spent[ch], 0)
			b.Budget, b.Remaining, b.Over = new(budget.String()), new(left.String()), left == 0
		}
		u.Budgets = append(u.Budgets, b)
	}
	return u, nil
}

// limitCodes are the codes of requests a limit refused.
var limitCodes = []string{"rate_limited", "daily_limit_exceeded", ReasonSMSCountry, ReasonSMSInternational, ReasonSMSRecipient}

// TenantLimits is one tenant's row of the operators' overview: its limits,
// its day's usage, and what its limits refused that day.
type TenantLimits struct {
	Tenant *Tenant
	Usage  *LimitUsage
	// Refused counts the day's refused requests by code (rate_limited,
	// daily_limit_exceeded, sms_*).
	Refused map[string]int
	// Hit names the limits the tenant met today: a refusal's code, or a
	// cap its counters reached.
	Hit []string
}

// Overview returns every tenant's limits and day's usage, for operators:
// who is near a cap, and who hit one today.
func (s *IntakeLimits) Overview(ctx context.Context) ([]*TenantLimits, error) {
	var out []*TenantLimits
	err := s.Store.InPlatform(ctx, func(tx LimitAdminTx) error {
		ts, err := tx.ListTenants(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			u, err := s.usage(ctx, tx, t)
			if err != nil {
				return err
			}
			day := DayOf(s.Now(), t.Timezone)
			midnight := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, zoneOf(t.Timezone))
			refused, err := tx.LimitRefusals(ctx, t.ID, midnight, limitCodes)
			if err != nil {
				return err
			}
			out = append(out, &TenantLimits{Tenant: t, Usage: u, Refused: refused, Hit: hitLimits(u, refused)})
		}
		return nil
	})
	return out, err
}

// hitLimits names the limits a tenant met today.
func hitLimits(u *LimitUsage, refused map[string]int) []string {
	var hit []string
	for _, code := range limitCodes {
		if refused[code] > 0 {
			hit = append(hit, code)
		}
	}
	for _, ch := range []Channel{Email, SMS, WhatsApp, Webhook} {
		if u.Used.Daily[ch] >= u.Limits.Daily[ch] && u.Used.Daily[ch] > 0 {
			hit = append(hit, "daily "+string(ch)+" cap reached")
		}
	}
	if u.Used.SMSInternational >= u.Limits.SMSInternationalDaily && u.Used.SMSInternational > 0 {
		hit = append(hit, "SMS abroad cap reached")
	}
	return hit
}

func (s *LimitSettings) custom() bool {
	return s.IntakePerMinute != nil || s.DailyEmail != nil || s.DailySMS != nil || s.DailyWhatsApp != nil ||
		s.DailyWebhook != nil || s.SMSCountries != nil || s.SMSInternationalDaily != nil || s.SMSRecipientDaily != nil ||
		s.MaxSMSParts != nil || s.BudgetEmail != nil || s.BudgetSMS != nil || s.BudgetWhatsApp != nil
}

// Budget is the tenant's monthly budget of a channel, nil for none.
func (s *LimitSettings) Budget(ch Channel) *Money {
	switch ch {
	case Email:
		return s.BudgetEmail
	case SMS:
		return s.BudgetSMS
	case WhatsApp:
		return s.BudgetWhatsApp
	}
	return nil
}

// Set replaces the tenant's limit settings (an operator's change) and
// audits the new ones.
func (s *IntakeLimits) Set(ctx context.Context, actor Actor, tenantID uuid.UUID, in LimitInput) error {
	set, err := in.Settings(tenantID)
	if err != nil {
		return err
	}
	set.UpdatedAt = s.Now()
	err = s.Store.InPlatform(ctx, func(tx LimitAdminTx) error {
		if _, err := tx.TenantByID(ctx, tenantID); err != nil {
			return err
		}
		if err := tx.SetLimitSettings(ctx, set); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "tenant.limits", "tenant", tenantID.String(), set.auditMetadata()))
	})
	// After the commit, so that no request caches the old settings anew.
	s.cache.Delete(tenantID)
	return err
}

func (s *LimitSettings) auditMetadata() map[string]any {
	m := map[string]any{}
	put := func(k string, v *int) {
		if v != nil {
			m[k] = *v
		} else {
			m[k] = "default"
		}
	}
	put("intake_per_minute", s.IntakePerMinute)
	put("daily_email", s.DailyEmail)
	put("daily_sms", s.DailySMS)
	put("daily_whatsapp", s.DailyWhatsApp)
	put("daily_webhook", s.DailyWebhook)
	put("sms_international_daily", s.SMSInternationalDaily)
	put("sms_recipient_daily", s.SMSRecipientDaily)
	put("max_sms_parts", s.MaxSMSParts)
	for k, v := range map[string]*Money{"budget_email": s.BudgetEmail, "budget_sms": s.BudgetSMS, "budget_whatsapp": s.BudgetWhatsApp} {
		if v != nil {
			m[k] = v.String()
		} else {
			m[k] = "none"
		}
	}
	if s.SMSCountries != nil {
		m["sms_countries"] = []string(s.SMSCountries)
	} else {
		m["sms_countries"] = "default"
	}
	return m
}

// Input returns the tenant's settings as the operator's form shows them:
// "" for each limit at its default.
func (s *IntakeLimits) Input(ctx context.Context, tenantID uuid.UUID) (LimitInput, error) {
	var set *LimitSettings
	err := s.Store.InTenant(ctx, tenantID, func(tx LimitAdminTx) (err error) {
		set, err = tx.LimitSettings(ctx, tenantID)
		return err
	})
	if err != nil {
		return LimitInput{}, err
	}
	text := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	return LimitInput{
		IntakePerMinute: text(set.IntakePerMinute), DailyEmail: text(set.DailyEmail), DailySMS: text(set.DailySMS),
		DailyWhatsApp: text(set.DailyWhatsApp), DailyWebhook: text(set.DailyWebhook),
		SMSCountries:          strings.Join(set.SMSCountries, ", "),
		SMSInternationalDaily: text(set.SMSInternationalDaily), SMSRecipientDaily: text(set.SMSRecipientDaily),
		MaxSMSParts: text(set.MaxSMSParts),
		BudgetEmail: money(set.BudgetEmail), BudgetSMS: money(set.BudgetSMS), BudgetWhatsApp: money(set.BudgetWhatsApp),
	}, nil
}

// money is an amount as the operator's form shows it, "" for none.
func money(m *Money) string {
	if m == nil {
		return ""
	}
	return m.String()
}

// Prune deletes the day counters of days before each tenant's yesterday,
// in batches: a counter is read only on its own day, and yesterday's stay
// for a look back.
func (s *IntakeLimits) Prune(ctx context.Context) (int, error) {
	now := s.Now()
	total := 0
	for {
		var n int
		err := s.Store.InPlatform(ctx, func(tx LimitAdminTx) (err error) {
			n, err = tx.PruneDayCounts(ctx, now, PruneBatch)
			return err
		})
		total += n
		if err != nil || n < PruneBatch {
			return total, err
		}
	}
}
