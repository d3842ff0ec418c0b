package app

import "github.com/google/uuid"

// Permission names one thing a console user may do. The console checks one
// on every route; Permissions below is the only place that says which role
// holds which.
type Permission string

// Platform permissions: only operators hold them.
const (
	// PermPlatform lists, creates and changes tenants (plan, retention,
	// suspension) and switches into any tenant.
	PermPlatform Permission = "platform"
	// PermQueues shows River's queues and jobs, pauses and resumes queues,
	// retries and cancels jobs. Queues are shared by every tenant.
	PermQueues Permission = "queues"
)

// Tenant permissions: held within the user's own tenant (operators: within
// any tenant they open).
const (
	PermDashboard Permission = "dashboard"
	// PermMessages shows the booking panel, messages and their timelines.
	PermMessages Permission = "messages.view"
	// PermResend sends a message again or retries a failed one.
	PermResend Permission = "messages.resend"
	// PermReply answers passengers from the inbox or the booking panel,
	// and snoozes, resolves, reopens and assigns their conversations.
	PermReply Permission = "conversations.reply"
	// PermCancelMessage cancels a queued message.
	PermCancelMessage Permission = "messages.cancel"
	// PermSchedules shows scheduled notifications and events awaiting approval.
	PermSchedules Permission = "schedules.view"
	// PermManageSchedules reschedules and cancels scheduled notifications.
	PermManageSchedules Permission = "schedules.manage"
	// PermApprove approves or rejects events that wait for approval.
	PermApprove Permission = "approvals.decide"
	// PermContacts changes contacts: opt-outs and opt-ins.
	PermContacts Permission = "contacts.manage"
	// PermEraseContacts erases a contact on request (its details, history
	// and the personal data of its messages); managers only.
	PermEraseContacts Permission = "contacts.erase"
	// PermAddresses shows phone numbers and e-mail addresses unmasked.
	PermAddresses Permission = "addresses.view"
	// PermChannels shows and changes channel accounts (secrets stay
	// write-only for everyone).
	PermChannels Permission = "channels.manage"
	// PermTemplates shows and changes templates.
	PermTemplates Permission = "templates.manage"
	// PermViewTemplates reads templates and their history. Console roles
	// hold it with PermTemplates; API keys with scope read hold it alone.
	PermViewTemplates Permission = "templates.view"
	// PermViewChannels reads channel accounts (never their secrets).
	// Console roles hold it with PermChannels; API keys with scope read
	// hold it alone.
	PermViewChannels Permission = "channels.view"
	// PermUsers invites, changes and disables the tenant's users.
	PermUsers Permission = "users.manage"
	// PermAPIKeys creates and revokes API keys.
	PermAPIKeys Permission = "apikeys.manage"
	// PermAudit reads the audit log.
	PermAudit Permission = "audit.view"
	// PermSettings changes the tenant's default locale, timezone and
	// retention.
	PermSettings Permission = "settings.manage"
	// PermCallbacks shows and changes the tenant's status callback
	// endpoints and their delivery logs.
	PermCallbacks Permission = "callbacks.manage"
)

// Permissions is the role table. Operators hold every permission.
var Permissions = map[string][]Permission{
	RoleOperator: {
		PermPlatform, PermQueues,
		PermDashboard, PermMessages, PermResend, PermReply, PermCancelMessage, PermSchedules, PermManageSchedules,
		PermApprove, PermAddresses, PermContacts, PermEraseContacts, PermChannels, PermTemplates, PermUsers, PermAPIKeys, PermAudit, PermSettings,
		PermViewTemplates, PermViewChannels, PermCallbacks,
	},
	RoleManager: {
		PermDashboard, PermMessages, PermResend, PermReply, PermCancelMessage, PermSchedules, PermManageSchedules,
		PermApprove, PermAddresses, PermContacts, PermEraseContacts, PermChannels, PermTemplates, PermUsers, PermAPIKeys, PermAudit, PermSettings,
		PermViewTemplates, PermViewChannels, PermCallbacks,
	},
	RoleSupport: {
		// Support records a passenger's wish to stop or resume messages
		// (a phone call, a letter) as the passenger would by keyword.
		PermDashboard, PermMessages, PermResend, PermReply, PermSchedules, PermContacts,
	},
}

var permissionSet = func() map[string]map[Permission]bool {
	m := map[string]map[Permission]bool{}
	for role, perms := range Permissions {
		m[role] = map[Permission]bool{}
		for _, p := range perms {
			m[role][p] = true
		}
	}
	return m
}()

// Can reports whether role holds permission p.
func Can(role string, p Permission) bool {
	return permissionSet[role][p]
}

// Can reports whether the user's role holds permission p.
func (u *User) Can(p Permission) bool {
	return u != nil && u.DisabledAt == nil && Can(u.Role, p)
}

// Principal is whoever works through the services the console and the API
// share: a signed-in user (*User) or an API key (*APIKey). Services check
// its permissions and name it in the audit log.
type Principal interface {
	// Can reports whether the principal holds permission p.
	Can(p Permission) bool
	// CanOpenTenant reports whether the principal may work in the tenant.
	CanOpenTenant(tenantID uuid.UUID) bool
	// Actor is the principal as the audit log names it.
	Actor() Actor
}

// CanOpenTenant reports whether the user may work in the tenant: operators
// in every tenant, everyone else in their own.
func (u *User) CanOpenTenant(tenantID uuid.UUID) bool {
	return u != nil && (u.Role == RoleOperator || u.TenantID != nil && *u.TenantID == tenantID)
}

// RequirePermission returns EFORBIDDEN unless u holds p. Services that
// change a tenant's data call it, so that a route that forgot its check
// still cannot do what the role (or the key's scopes) may not.
func RequirePermission(u Principal, p Permission) error {
	if u == nil || !u.Can(p) {
		if _, ok := u.(*APIKey); ok {
			return &Error{Code: EFORBIDDEN, Reason: "insufficient_scope", Message: "This API key's scopes do not allow this."}
		}
		return Errorf(EFORBIDDEN, "Your role cannot do this.")
	}
	return nil
}
