package app

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Limits of a tenant's event definition.
const (
	MaxTenantEventVariables = 30
	MaxTenantEventSupersede = 30
	MaxTenantEventExpiry    = 90 * 24 * time.Hour
)

// TenantEvent is one version of an event a tenant defined for itself. The
// newest version of a name is the definition; a Deleted version removes
// it. Versions are never changed: an edit adds one.
type TenantEvent struct {
	TenantID    uuid.UUID     `db:"tenant_id" json:"-"`
	Name        string        `db:"name" json:"trigger_event"`
	Version     int           `db:"version" json:"version"`
	Description string        `db:"description" json:"description"`
	Variables   JSON          `db:"variables" json:"-"`
	Channels    StringList    `db:"channels" json:"channels"`
	Category    EventCategory `db:"category" json:"category"`
	Urgent      bool          `db:"urgent" json:"urgent"`
	Expiry      JSON          `db:"expiry" json:"-"`
	Supersedes  StringList    `db:"supersedes" json:"supersedes"`
	Deleted     bool          `db:"deleted" json:"deleted"`
	CreatedBy   string        `db:"created_by" json:"created_by"`
	CreatedAt   time.Time     `db:"created_at" json:"created_at"`
}

// ExpiryInput is an event's expiry rule as the registry's API and forms
// give it: the event expires at a context time (At, RFC 3339), else when a
// context date (Date) is over, else AfterMinutes after it was due. All
// empty: it never expires.
type ExpiryInput struct {
	At           string `json:"at,omitempty"`
	Date         string `json:"date,omitempty"`
	AfterMinutes int    `json:"after_minutes,omitempty"`
}

// TenantEventInput is a tenant event as a caller defines it.
type TenantEventInput struct {
	Name        string        `json:"trigger_event"`
	Description string        `json:"description"`
	Variables   []Variable    `json:"variables"`
	Channels    []string      `json:"channels"`
	Category    EventCategory `json:"category"`
	Urgent      bool          `json:"urgent"`
	Expiry      *ExpiryInput  `json:"expiry,omitempty"`
	Supersedes  []string      `json:"supersedes"`
}

// RegistryTx lists the statements the Registry runs.
type RegistryTx interface {
	Tx
	EventReader
	// TenantEvents returns the newest version of each of the tenant's
	// events that is not deleted, by name.
	TenantEvents(ctx context.Context, tenantID uuid.UUID) ([]*TenantEvent, error)
	// TenantEventVersions returns every version of the event, newest
	// first; TenantEventVersion one of them, or ENOTFOUND.
	TenantEventVersions(ctx context.Context, tenantID uuid.UUID, name string) ([]*TenantEvent, error)
	TenantEventVersion(ctx context.Context, tenantID uuid.UUID, name string, version int) (*TenantEvent, error)
	// InsertTenantEvent adds a version; a version stored meanwhile by
	// someone else is an ECONFLICT.
	InsertTenantEvent(ctx context.Context, e *TenantEvent) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Registry is the trigger-event registry of every tenant: the built-in
// events compiled into Herald, and each tenant's own events, which only
// that tenant sees. Lookup is the one way to resolve an event's name.
type Registry struct {
	Store Store[RegistryTx]
	Now   Clock
}

// EventReader reads a tenant's own event definitions: every
// transaction that resolves an event (RouteTx, ...) has it.
type EventReader interface {
	// TenantEvent returns the newest version of the tenant's event, deleted
	// or not, or ENOTFOUND when the tenant never defined it.
	TenantEvent(ctx context.Context, tenantID uuid.UUID, name string) (*TenantEvent, error)
}

// LookupEvent returns the tenant's definition of a trigger event, read in
// tx, an open transaction of the tenant: a built-in one, else the
// tenant's own; ENOTFOUND when neither has the name. It is the one way an
// event's name is resolved (Registry.Lookup runs it in a transaction of
// its own). A built-in event costs no statement and a tenant's one
// indexed read, so no process keeps a stale definition.
func LookupEvent(ctx context.Context, tx EventReader, tenantID uuid.UUID, name string) (*EventDef, error) {
	if def, ok, _ := BuiltIn(name); ok {
		return def, nil
	}
	if !eventName.MatchString(name) {
		return nil, Errorf(ENOTFOUND, "Event %q is not known.", name)
	}
	te, err := tx.TenantEvent(ctx, tenantID, name)
	switch {
	case err != nil:
		return nil, err
	case te.Deleted:
		return nil, Errorf(ENOTFOUND, "Event %q is not known.", name)
	}
	return te.Def()
}

// Lookup is LookupEvent in a transaction of its own.
func (r *Registry) Lookup(ctx context.Context, tenantID uuid.UUID, name string) (*EventDef, error) {
	if def, ok, _ := BuiltIn(name); ok {
		// No transaction for what needs no statement.
		return def, nil
	}
	var def *EventDef
	err := r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) (err error) {
		def, err = LookupEvent(ctx, tx, tenantID, name)
		return err
	})
	return def, err
}

// EventLookup resolves a trigger event's name for one tenant: whether it
// is known, and its definition.
type EventLookup func(name string) (*EventDef, bool, error)

// For is Lookup bound to one tenant.
func (r *Registry) For(ctx context.Context, tenantID uuid.UUID) EventLookup {
	return func(name string) (*EventDef, bool, error) { return r.Known(ctx, tenantID, name) }
}

// Memo returns the lookup remembering each name's answer: for a batch of
// one tenant's requests (an upload's rows), which resolves its event once.
func (l EventLookup) Memo() EventLookup {
	type answer struct {
		def   *EventDef
		known bool
	}
	seen := map[string]answer{}
	return func(name string) (*EventDef, bool, error) {
		if a, ok := seen[name]; ok {
			return a.def, a.known, nil
		}
		def, known, err := l(name)
		if err == nil {
			seen[name] = answer{def, known}
		}
		return def, known, err
	}
}

// BuiltIn resolves the built-in events alone, the first step of every
// Lookup: for checks that no tenant's events take part in.
func BuiltIn(name string) (*EventDef, bool, error) {
	def, ok := registry[name]
	return def, ok, nil
}

// Known reports whether the tenant can send the event; an error other
// than ENOTFOUND is returned as it is.
func (r *Registry) Known(ctx context.Context, tenantID uuid.UUID, name string) (*EventDef, bool, error) {
	def, err := r.Lookup(ctx, tenantID, name)
	if ErrorCode(err) == ENOTFOUND {
		return nil, false, nil
	}
	return def, err == nil, err
}

// Events returns the tenant's registry, built-in and own events, sorted by
// name.
func (r *Registry) Events(ctx context.Context, tenantID uuid.UUID) ([]EventDef, error) {
	var own []*TenantEvent
	err := r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) (err error) {
		own, err = tx.TenantEvents(ctx, tenantID)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := Events()
	for _, te := range own {
		def, err := te.Def()
		if err != nil {
			return nil, err
		}
		out = append(out, *def)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Versions returns every version of the tenant's event, newest first.
func (r *Registry) Versions(ctx context.Context, tenantID uuid.UUID, name string) ([]*TenantEvent, error) {
	var vs []*TenantEvent
	err := r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) (err error) {
		vs, err = tx.TenantEventVersions(ctx, tenantID, name)
		return err
	})
	if err == nil && len(vs) == 0 {
		err = r.notOwn(name)
	}
	return vs, err
}

// Version returns one version of the tenant's event.
func (r *Registry) Version(ctx context.Context, tenantID uuid.UUID, name string, version int) (*TenantEvent, error) {
	var v *TenantEvent
	err := r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) (err error) {
		v, err = tx.TenantEventVersion(ctx, tenantID, name, version)
		return err
	})
	return v, err
}

// notOwn is the error of a name that is no event of the tenant's own: a
// built-in one cannot be changed, any other is not found.
func (r *Registry) notOwn(name string) error {
	if _, ok := registry[name]; ok {
		return &Error{Code: EFORBIDDEN, Reason: "builtin_event", Field: "trigger_event",
			Message: fmt.Sprintf("%s is a built-in event: it is read-only. Define an event of your own instead.", name)}
	}
	return Errorf(ENOTFOUND, "Event %s is not one of your events.", name)
}

// Create defines a new event for the tenant (version 1, or the next
// version of a name the tenant deleted). The change is audited.
func (r *Registry) Create(ctx context.Context, actor Actor, tenantID uuid.UUID, in TenantEventInput) (*TenantEvent, error) {
	return r.write(ctx, actor, tenantID, "", in)
}

// Update changes the tenant's event: its next version.
func (r *Registry) Update(ctx context.Context, actor Actor, tenantID uuid.UUID, name string, in TenantEventInput) (*TenantEvent, error) {
	in.Name = name
	return r.write(ctx, actor, tenantID, name, in)
}

// Delete removes the tenant's event: a deleted version. Messages already
// made keep their text; new requests for it are refused.
func (r *Registry) Delete(ctx context.Context, actor Actor, tenantID uuid.UUID, name string) error {
	if _, ok := registry[name]; ok {
		return r.notOwn(name)
	}
	return r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) error {
		cur, err := tx.TenantEvent(ctx, tenantID, name)
		switch {
		case ErrorCode(err) == ENOTFOUND || (err == nil && cur.Deleted):
			return r.notOwn(name)
		case err != nil:
			return err
		}
		gone := *cur
		gone.Version, gone.Deleted, gone.CreatedBy, gone.CreatedAt = cur.Version+1, true, actor.Label, r.Now()
		if err := tx.InsertTenantEvent(ctx, &gone); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "event.delete", "event", name, map[string]any{"version": gone.Version}))
	})
}

// write validates in and stores it as the next version of the tenant's
// event: a new one when editing is "", else the one named editing, which
// must exist.
func (r *Registry) write(ctx context.Context, actor Actor, tenantID uuid.UUID, editing string, in TenantEventInput) (*TenantEvent, error) {
	if editing != "" {
		if _, ok := registry[editing]; ok {
			return nil, r.notOwn(editing)
		}
	}
	te, err := in.validate(func(name string) bool { return r.isEvent(ctx, tenantID, name) })
	if err != nil {
		return nil, err
	}
	te.TenantID, te.CreatedBy, te.CreatedAt = tenantID, actor.Label, r.Now()
	err = r.Store.InTenant(ctx, tenantID, func(tx RegistryTx) error {
		cur, err := tx.TenantEvent(ctx, tenantID, te.Name)
		switch {
		case err != nil && ErrorCode(err) != ENOTFOUND:
			return err
		case editing == "" && err == nil && !cur.Deleted:
			return &Error{Code: ECONFLICT, Reason: "event_exists", Field: "trigger_event",
				Message: fmt.Sprintf("You have an event %s already; change it instead.", te.Name)}
		case editing != "" && (err != nil || cur.Deleted):
			return r.notOwn(editing)
		}
		te.Version = 1
		if cur != nil {
			te.Version = cur.Version + 1
		}
		if err := tx.InsertTenantEvent(ctx, te); err != nil {
			return err
		}
		action := "event.update"
		if editing == "" {
			action = "event.create"
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, action, "event", te.Name, map[string]any{"version": te.Version}))
	})
	if err != nil {
		return nil, err
	}
	return te, nil
}

// isEvent reports whether the tenant can name the event: built-in or its
// own.
func (r *Registry) isEvent(ctx context.Context, tenantID uuid.UUID, name string) bool {
	_, ok, _ := r.Known(ctx, tenantID, name)
	return ok
}

// eventName is an event's name: upper snake case.
var eventName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// variableName is a variable's name: lower snake case.
var variableName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// validate checks a definition and returns it as a version to store
// (without tenant, version and author). known reports whether a
// superseded event exists.
func (in TenantEventInput) validate(known func(string) bool) (*TenantEvent, error) {
	var p problems
	in.Name = strings.TrimSpace(in.Name)
	switch _, builtin := registry[in.Name]; {
	case in.Name == "":
		p.add(Invalid("missing_name", "trigger_event", "trigger_event is required: the event's name in upper snake case, such as SEAT_UPGRADE_OFFERED."))
	case len(in.Name) > 64 || !eventName.MatchString(in.Name):
		p.add(Invalid("invalid_name", "trigger_event", "trigger_event %q must be upper snake case (A-Z, 0-9 and _, starting with a letter), at most 64 characters.", in.Name))
	case builtin:
		p.add(Invalid("builtin_name", "trigger_event", "%s is a built-in event; give your event another name.", in.Name))
	}
	in.Description = strings.TrimSpace(in.Description)
	if in.Description == "" || len([]rune(in.Description)) > 500 {
		p.add(Invalid("invalid_description", "description", "description is required: what happened, in at most 500 characters."))
	}
	vars := checkVariableDefs(&p, in.Variables)
	channels := StringList(normalizeChannels(&p, "channels", in.Channels))
	if len(in.Channels) == 0 {
		p.add(Invalid("missing_channels", "channels", "channels is required: the channels the event goes out on when a request names none (WHATSAPP, EMAIL, SMS, WEBHOOK)."))
	}
	if in.Category != CategoryTransactional && in.Category != CategoryOptional {
		p.add(Invalid("invalid_category", "category", "category must be transactional (always sent) or optional (a contact's opt-outs are honoured)."))
	}
	expiry := checkExpiry(&p, in.Expiry, vars)
	supersedes := checkSupersedes(&p, in.Name, in.Supersedes, known)
	if err := p.err(); err != nil {
		return nil, err
	}
	varsJSON, _ := json.Marshal(vars)
	return &TenantEvent{Name: in.Name, Description: in.Description, Variables: varsJSON, Channels: channels,
		Category: in.Category, Urgent: in.Urgent, Expiry: expiry, Supersedes: supersedes}, nil
}

// checkVariableDefs checks an event's variables and returns them trimmed.
func checkVariableDefs(p *problems, in []Variable) []Variable {
	if len(in) > MaxTenantEventVariables {
		p.add(Invalid("too_many_variables", "variables", "An event has at most %d variables.", MaxTenantEventVariables))
		return nil
	}
	out := make([]Variable, 0, len(in))
	for i, v := range in {
		field := fmt.Sprintf("variables[%d]", i)
		v.Name = strings.TrimSpace(v.Name)
		switch {
		case len(v.Name) > 64 || !variableName.MatchString(v.Name):
			p.add(Invalid("invalid_variable_name", field+".name", "%s.name %q must be lower snake case (a-z, 0-9 and _, starting with a letter), at most 64 characters.", field, v.Name))
		case slices.Contains(RecipientVariables, v.Name) || slices.ContainsFunc(out, func(o Variable) bool { return o.Name == v.Name }):
			p.add(Invalid("duplicate_variable", field+".name", "%s.name %q is given twice or is a recipient's placeholder.", field, v.Name))
		}
		if !slices.Contains(VariableTypes, v.Type) {
			p.add(Invalid("invalid_variable_type", field+".type", "%s.type must be one of %s.", field, joinTypes()))
		}
		v.Values = checkEnumValues(p, field, v)
		out = append(out, v)
	}
	return out
}

// checkEnumValues checks an enum's allowed values; other types have none.
func checkEnumValues(p *problems, field string, v Variable) []string {
	if v.Type != VarEnum {
		if len(v.Values) > 0 {
			p.add(Invalid("unexpected_values", field+".values", "Only an enum variable has values; %s is a %s.", v.Name, v.Type))
		}
		return nil
	}
	var out []string
	for _, s := range v.Values {
		s = strings.TrimSpace(s)
		if s == "" || len(s) > 100 || slices.Contains(out, s) {
			p.add(Invalid("invalid_values", field+".values", "%s.values must be distinct, non-empty and at most 100 characters each.", field))
			return nil
		}
		out = append(out, s)
	}
	if len(out) == 0 || len(out) > MaxEnumValues {
		p.add(Invalid("invalid_values", field+".values", "An enum variable lists 1 to %d allowed values.", MaxEnumValues))
	}
	return out
}

func joinTypes() string {
	s := make([]string, len(VariableTypes))
	for i, t := range VariableTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// checkExpiry checks an expiry rule against the event's variables and
// returns it stored, nil for none.
func checkExpiry(p *problems, e *ExpiryInput, vars []Variable) JSON {
	if e == nil || *e == (ExpiryInput{}) {
		return nil
	}
	e.At, e.Date = strings.TrimSpace(e.At), strings.TrimSpace(e.Date)
	typed := func(name string, t VariableType) bool {
		return slices.ContainsFunc(vars, func(v Variable) bool { return v.Name == name && v.Type == t })
	}
	if e.At != "" && !typed(e.At, VarTime) {
		p.add(Invalid("invalid_expiry", "expiry.at", "expiry.at names a time variable of the event; %q is not one.", e.At))
	}
	if e.Date != "" && !typed(e.Date, VarDate) {
		p.add(Invalid("invalid_expiry", "expiry.date", "expiry.date names a date variable of the event; %q is not one.", e.Date))
	}
	if e.AfterMinutes < 0 || time.Duration(e.AfterMinutes)*time.Minute > MaxTenantEventExpiry {
		p.add(Invalid("invalid_expiry", "expiry.after_minutes", "expiry.after_minutes is 1 to %d (90 days), or left out.", int(MaxTenantEventExpiry/time.Minute)))
	}
	b, _ := json.Marshal(e)
	return b
}

// checkSupersedes checks the events an event supersedes: known to the
// tenant, each once, and not itself.
func checkSupersedes(p *problems, name string, in []string, known func(string) bool) StringList {
	if len(in) > MaxTenantEventSupersede {
		p.add(Invalid("too_many_supersedes", "supersedes", "An event supersedes at most %d events.", MaxTenantEventSupersede))
		return nil
	}
	out := StringList{}
	for i, s := range in {
		s = strings.TrimSpace(s)
		field := fmt.Sprintf("supersedes[%d]", i)
		switch {
		case s == name:
			p.add(Invalid("invalid_supersedes", field, "An event cannot supersede itself."))
		case slices.Contains(out, s):
			p.add(Invalid("invalid_supersedes", field, "%s is listed twice.", s))
		case !eventName.MatchString(s) || !known(s):
			p.add(Invalid("unknown_event", field, "%q is neither a built-in event nor one of yours.", s))
		default:
			out = append(out, s)
		}
	}
	return out
}

// Types returns the version's variables.
func (te *TenantEvent) Types() []Variable {
	var vs []Variable
	_ = json.Unmarshal(te.Variables, &vs)
	return vs
}

// ExpiryRule returns the version's expiry rule, nil for none.
func (te *TenantEvent) ExpiryRule() *ExpiryInput {
	if len(te.Expiry) == 0 || string(te.Expiry) == "null" {
		return nil
	}
	var e ExpiryInput
	_ = json.Unmarshal(te.Expiry, &e)
	return &e
}

// MarshalJSON shows a version with its variables and expiry decoded.
func (te *TenantEvent) MarshalJSON() ([]byte, error) {
	type plain TenantEvent
	return json.Marshal(struct {
		*plain
		Variables []Variable   `json:"variables"`
		Expiry    *ExpiryInput `json:"expiry"`
	}{(*plain)(te), te.Types(), te.ExpiryRule()})
}

// Def returns the version as a registry entry.
func (te *TenantEvent) Def() (*EventDef, error) {
	types := te.Types()
	def := &EventDef{Name: te.Name, Description: te.Description, Category: te.Category, Urgent: te.Urgent,
		Supersedes: te.Supersedes, Types: types, Variables: make([]string, len(types)), Sample: map[string]any{},
		Tenant: true, Version: te.Version}
	for _, c := range te.Channels {
		def.Channels = append(def.Channels, Channel(c))
	}
	for i, v := range types {
		def.Variables[i] = v.Name
		def.Sample[v.Name] = v.Sample()
	}
	if e := te.ExpiryRule(); e != nil {
		def.Expiry = &ExpiryRule{At: e.At, Date: e.Date, After: time.Duration(e.AfterMinutes) * time.Minute}
	}
	return def, nil
}
