package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// routes lists every route Herald serves, so the whole surface reads in one
// screen.
func (s *Server) routes(a *fiber.App) {
	a.Use(s.requestID, s.observe, s.recoverPanic, s.securityHeaders, s.markUpload, s.refuseEncodedBody)

	a.Get("/healthz", s.handleHealthz)
	a.Get("/readyz", s.handleReadyz)
	a.Get("/metrics", s.handleMetrics)
	a.Get("/static/*", s.handleStatic)
	a.Get("/favicon.ico", func(c *fiber.Ctx) error { return c.Redirect("/static/favicon.svg", fiber.StatusMovedPermanently) })

	a.Get("/api/openapi.json", s.handleOpenAPI)
	// The API: every route names the scope its key needs (app.Scope*).
	api := apiGroup{s: s, r: a.Group("/api/v1", s.recordRejections, s.refuseDeepBody, s.requireAPIKey, s.limitIntake, s.refuseNUL), prefix: "/api/v1"}
	api.get("/tenant", app.ScopeRead, s.handleAPITenant)
	api.patch("/tenant", app.ScopeManage, s.handleAPITenantUpdate)
	api.get("/limits", app.ScopeRead, s.handleAPILimits)
	api.get("/budgets", app.ScopeRead, s.handleAPIBudgets)
	api.get("/events", app.ScopeRead, s.handleAPIEvents)
	api.post("/events", app.ScopeManage, s.handleAPIEventCreate)
	api.get("/events/:name", app.ScopeRead, s.handleAPIEventGet)
	api.put("/events/:name", app.ScopeManage, s.handleAPIEventUpdate)
	api.delete("/events/:name", app.ScopeManage, s.handleAPIEventDelete)
	api.get("/events/:name/versions", app.ScopeRead, s.handleAPIEventVersions)
	api.get("/events/:name/versions/:version", app.ScopeRead, s.handleAPIEventVersion)
	api.post("/notifications", app.ScopeSend, s.handleAPINotificationCreate)
	api.get("/notifications", app.ScopeRead, s.handleAPINotificationFind)
	api.get("/notifications/:id", app.ScopeRead, s.handleAPINotificationGet)
	api.patch("/notifications/:id", app.ScopeManage, s.handleAPINotificationReschedule)
	api.delete("/notifications/:id", app.ScopeManage, s.handleAPINotificationCancel)
	api.post("/notifications/:id/approve", app.ScopeApprove, s.handleAPINotificationApprove)
	api.post("/notifications/:id/reject", app.ScopeApprove, s.handleAPINotificationReject)
	api.get("/messages", app.ScopeRead, s.handleAPIMessageList)
	api.get("/messages/:id", app.ScopeRead, s.handleAPIMessageGet)
	api.post("/messages/:id/retry", app.ScopeSend, s.handleAPIMessageRetry)
	api.get("/trips/:id/reach", app.ScopeRead, s.handleAPITripReach)
	api.post("/bookings/:id/resend", app.ScopeSend, s.handleAPIBookingResend)
	// Conversations: what passengers wrote, and answers to them.
	api.get("/conversations", app.ScopeRead, s.handleAPIConversationList)
	api.get("/conversations/:id", app.ScopeRead, s.handleAPIConversationGet)
	api.post("/conversations/:id/replies", app.ScopeSend, s.handleAPIConversationReply)
	api.post("/conversations/:id/status", app.ScopeSend, s.handleAPIConversationStatus)
	// Passenger lists: the file's body is streamed to its reader.
	api.post("/uploads", app.ScopeSend, s.handleAPIUploadCreate)
	api.get("/uploads/:id", app.ScopeRead, s.handleAPIUploadGet)
	api.post("/uploads/:id/start", app.ScopeSend, s.handleAPIUploadStart)
	api.get("/uploads/:id/errors", app.ScopeRead, s.handleAPIUploadErrors)
	api.get("/delivery-deadlines", app.ScopeRead, s.handleAPIDeadlineList)
	api.put("/delivery-deadlines", app.ScopeManage, s.handleAPIDeadlineSet)
	api.get("/branding", app.ScopeRead, s.handleAPIBrandingGet)
	api.put("/branding", app.ScopeManage, s.handleAPIBrandingSet)
	api.get("/alerts/settings", app.ScopeRead, s.handleAPIAlertSettingsGet)
	api.put("/alerts/settings", app.ScopeManage, s.handleAPIAlertSettingsSet)
	api.get("/confirmation-windows", app.ScopeRead, s.handleAPIConfirmWindowList)
	api.put("/confirmation-windows", app.ScopeManage, s.handleAPIConfirmWindowSet)
	api.get("/scheduled-notifications", app.ScopeRead, s.handleAPIScheduledList)
	api.get("/approvals", app.ScopeRead, s.handleAPIApprovalList)
	api.get("/approvals/:id", app.ScopeRead, s.handleAPIApprovalGet)
	api.get("/templates", app.ScopeRead, s.handleAPITemplateList)
	api.post("/templates", app.ScopeManage, s.handleAPITemplateCreate)
	api.get("/templates/:id", app.ScopeRead, s.handleAPITemplateGet)
	api.put("/templates/:id", app.ScopeManage, s.handleAPITemplateUpdate)
	api.get("/templates/:id/versions", app.ScopeRead, s.handleAPITemplateVersions)
	api.post("/templates/:id/versions/:version/restore", app.ScopeManage, s.handleAPITemplateRestore)
	api.post("/templates/:id/activate", app.ScopeManage, s.handleAPITemplateActivate)
	api.post("/templates/:id/deactivate", app.ScopeManage, s.handleAPITemplateDeactivate)
	api.get("/channel-accounts", app.ScopeRead, s.handleAPIAccountList)
	api.post("/channel-accounts", app.ScopeManage, s.handleAPIAccountCreate)
	api.get("/channel-accounts/:id", app.ScopeRead, s.handleAPIAccountGet)
	api.patch("/channel-accounts/:id", app.ScopeManage, s.handleAPIAccountUpdate)
	api.post("/channel-accounts/:id/activate", app.ScopeManage, s.handleAPIAccountActivate)
	api.post("/channel-accounts/:id/suspend", app.ScopeManage, s.handleAPIAccountSuspend)
	api.post("/channel-accounts/:id/test", app.ScopeManage, s.handleAPIAccountTest)
	api.get("/callback-endpoints", app.ScopeRead, s.handleAPICallbackList)
	api.post("/callback-endpoints", app.ScopeManage, s.handleAPICallbackCreate)
	api.get("/callback-endpoints/:id", app.ScopeRead, s.handleAPICallbackGet)
	api.patch("/callback-endpoints/:id", app.ScopeManage, s.handleAPICallbackUpdate)
	api.delete("/callback-endpoints/:id", app.ScopeManage, s.handleAPICallbackDelete)
	api.post("/callback-endpoints/:id/rotate-secret", app.ScopeManage, s.handleAPICallbackRotate)
	api.post("/callback-endpoints/:id/test", app.ScopeManage, s.handleAPICallbackTest)
	api.get("/callback-endpoints/:id/deliveries", app.ScopeRead, s.handleAPICallbackDeliveries)
	api.post("/callback-endpoints/:id/deliveries/:delivery/replay", app.ScopeManage, s.handleAPICallbackReplay)
	// Contacts.
	api.get("/contacts", app.ScopeRead, s.handleAPIContactList)
	api.get("/contacts/:id", app.ScopeRead, s.handleAPIContactGet)
	api.patch("/contacts/:id", app.ScopeManage, s.handleAPIContactUpdate)
	api.post("/contacts/:id/opt-out", app.ScopeManage, s.handleAPIContactOptOut)
	api.post("/contacts/:id/opt-in", app.ScopeManage, s.handleAPIContactOptIn)
	api.post("/contacts/:id/erase", app.ScopeManage, s.handleAPIContactErase)
	// No catch-all under /api: an unknown path falls through to fiber's 404,
	// and a known path with another method to its 405 with Allow; the error
	// handler answers both in JSON.

	// Webhook posts come from anyone until a signature is checked: their
	// bodies are bounded before either a check or a parser reads them.
	a.Get("/webhooks/meta/a/:token", s.handleWebhookMetaVerify)
	a.Post("/webhooks/meta/a/:token", s.refuseDeepBody, s.handleWebhookMeta)
	// The older path by tenant slug, kept for webhooks configured with it.
	a.Get("/webhooks/meta/:tenant", s.handleWebhookMetaVerify)
	a.Post("/webhooks/meta/:tenant", s.refuseDeepBody, s.handleWebhookMeta)
	a.Post("/webhooks/ses", s.refuseDeepBody, s.handleWebhookSES)
	a.Post("/webhooks/sns-sms", s.refuseDeepBody, s.handleWebhookSMS)
	// An optional e-mail's one-click unsubscribe link (RFC 8058): no login.
	// Both are throttled per client address (limitPublic).
	a.Get("/unsubscribe/:token", s.limitPublic, s.handleUnsubscribePage)
	a.Post("/unsubscribe/:token", s.limitPublic, s.handleUnsubscribe)
	// A message's file behind its signed short link: no login.
	a.Get("/f/:token", s.limitPublic, s.handleFile)
	// A safety message's signed acknowledgement link: no login; the page
	// asks, its one button acknowledges. Throttled like the others.
	a.Get("/ack/:token", s.limitPublic, s.handleAckPage)
	a.Post("/ack/:token", s.limitPublic, s.handleAck)

	s.consoleRoutesOn(a)
}

// consoleRoutesOn registers the console. Every route but sign-in requires a
// session (and a CSRF token on changes); routes under /t/:tenant require
// access to that tenant; each route names the permission it requires.
// Areas are kept in separate blocks.
func (s *Server) consoleRoutesOn(a *fiber.App) {
	a.Get("/login", s.handleLoginPage)
	a.Post("/login", s.handleLogin)
	// The second step of a sign-in with a second factor: no session yet,
	// a signed second-step cookie and the sign-in form's CSRF token.
	a.Post("/login/two-factor", s.handleLoginSecondStep)
	a.Post("/login/two-factor/key/options", s.handleLoginKeyOptions)
	a.Post("/login/two-factor/key", s.handleLoginKey)
	a.Get("/", s.requireUser, s.handleHome)
	a.Post("/logout", s.requireUser, s.handleLogout)
	a.Get("/account/password", s.requireUser, s.handlePasswordPage)
	a.Post("/account/password", s.requireUser, s.handlePassword)
	a.Get("/account/two-factor", s.requireUser, s.handleTwoFactorPage)
	a.Post("/account/two-factor", s.requireUser, s.handleTwoFactorConfirm)
	a.Post("/account/two-factor/disable", s.requireUser, s.handleTwoFactorDisable)
	a.Post("/account/two-factor/keys/options", s.requireUser, s.handleSecurityKeyOptions)
	a.Post("/account/two-factor/keys", s.requireUser, s.handleSecurityKeyAdd)
	a.Post("/account/two-factor/keys/:id/remove", s.requireUser, s.handleSecurityKeyRemove)
	a.Post("/account/two-factor/recovery-codes", s.requireUser, s.handleRecoveryCodesRenew)

	// Operator pages: every tenant, River's queues, the platform audit log.
	op := consoleGroup{s: s, r: a, mw: []fiber.Handler{s.requireUser}}
	op.get("/tenants", app.PermPlatform, s.handleTenants)
	op.post("/tenants", app.PermPlatform, s.handleTenantCreate)
	op.get("/tenants/new", app.PermPlatform, s.handleTenantNew)
	op.get("/tenants/:id", app.PermPlatform, s.handleTenantShow)
	op.post("/tenants/:id", app.PermPlatform, s.handleTenantUpdate)
	op.post("/tenants/:id/limits", app.PermPlatform, s.handleTenantLimits)
	op.get("/limits", app.PermPlatform, s.handleLimitsOverview)
	op.get("/prices", app.PermPlatform, s.handlePriceList)
	op.post("/prices", app.PermPlatform, s.handlePricePut)
	op.post("/prices/delete", app.PermPlatform, s.handlePriceDelete)
	op.post("/tenants/:id/suspend", app.PermPlatform, s.handleTenantSuspend)
	op.post("/tenants/:id/reactivate", app.PermPlatform, s.handleTenantReactivate)

	// Operators: their second factors and the rule for them.
	op.get("/operators", app.PermPlatform, s.handleOperators)
	op.post("/operators/two-factor", app.PermPlatform, s.handleOperatorTwoFactorRequire)
	op.post("/operators/:id/reset-two-factor", app.PermPlatform, s.handleOperatorTwoFactorReset)

	// Queues.
	op.get("/queues", app.PermQueues, s.handleQueues)
	op.get("/queues/jobs/:id", app.PermQueues, s.handleJob)
	op.post("/queues/jobs/:id/retry", app.PermQueues, s.handleJobRetry)
	op.post("/queues/jobs/:id/cancel", app.PermQueues, s.handleJobCancel)
	op.get("/queues/:queue", app.PermQueues, s.handleQueue)
	op.post("/queues/:queue/pause", app.PermQueues, s.handleQueuePause)
	op.post("/queues/:queue/resume", app.PermQueues, s.handleQueueResume)

	// Platform audit log.
	op.get("/audit", app.PermPlatform, s.handlePlatformAudit)

	// Tenant pages.
	t := consoleGroup{s: s, r: a, prefix: "/t/:tenant", tenant: true, mw: []fiber.Handler{s.requireUser, s.requireTenant}}

	// Dashboard.
	t.get("/", app.PermDashboard, s.handleDashboard)

	// Channel accounts.
	t.get("/channels", app.PermChannels, s.handleChannelList)
	t.get("/channels/new", app.PermChannels, s.handleChannelNew)
	t.post("/channels", app.PermChannels, s.handleChannelCreate)
	t.get("/channels/:id", app.PermChannels, s.handleChannelDetail)
	t.post("/channels/:id", app.PermChannels, s.handleChannelUpdate)
	t.get("/channels/:id/edit", app.PermChannels, s.handleChannelEdit)
	t.post("/channels/:id/activate", app.PermChannels, s.handleChannelActivate)
	t.post("/channels/:id/suspend", app.PermChannels, s.handleChannelSuspend)
	t.post("/channels/:id/rotate", app.PermChannels, s.handleChannelRotate)
	t.get("/channels/:id/test", app.PermChannels, s.handleChannelTestForm)
	t.post("/channels/:id/test", app.PermChannels, s.handleChannelTest)
	t.get("/channels/:id/test/:message", app.PermChannels, s.handleChannelTestResult)
	t.get("/channels/:id/templates", app.PermChannels, s.handleMetaTemplates)
	t.post("/channels/:id/templates/sync", app.PermChannels, s.handleMetaTemplateSync)
	t.post("/channels/:id/templates/submit", app.PermChannels, s.handleMetaTemplateSubmit)

	// Templates.
	t.get("/templates", app.PermTemplates, s.handleTemplateList)
	t.get("/templates/new", app.PermTemplates, s.handleTemplateNew)
	t.post("/templates", app.PermTemplates, s.handleTemplateCreate)
	t.post("/templates/preview", app.PermTemplates, s.handleTemplatePreview)
	t.post("/templates/test", app.PermTemplates, s.handleTemplateTest)
	t.get("/templates/tests/:message", app.PermTemplates, s.handleTemplateTestResult)
	t.get("/templates/:id", app.PermTemplates, s.handleTemplateEdit)
	t.post("/templates/:id", app.PermTemplates, s.handleTemplateUpdate)
	t.get("/templates/:id/versions", app.PermTemplates, s.handleTemplateHistory)
	t.get("/templates/:id/versions/:version", app.PermTemplates, s.handleTemplateVersion)
	t.post("/templates/:id/versions/:version/restore", app.PermTemplates, s.handleTemplateRestore)
	t.post("/templates/:id/deactivate", app.PermTemplates, s.handleTemplateDeactivate)
	t.post("/templates/:id/reactivate", app.PermTemplates, s.handleTemplateReactivate)

	// Search: people by booking reference, name, e-mail or phone.
	t.get("/search", app.PermMessages, s.handleSearch)

	// Booking panel and messages.
	t.get("/bookings", app.PermMessages, s.handleBookingSearch)
	t.get("/bookings/:type/:id", app.PermMessages, s.handleBookingPanel)
	t.get("/trips/:id", app.PermMessages, s.handleTripPage)
	t.post("/bookings/:type/:id/resend", app.PermResend, s.handleBookingResend)
	t.get("/messages", app.PermMessages, s.handleMessageList)
	t.get("/messages/:id", app.PermMessages, s.handleMessageShow)
	t.post("/messages/:id/retry", app.PermResend, s.handleMessageRetry)
	t.post("/messages/:id/files/:file/send", app.PermResend, s.handleMessageFileSend)
	t.post("/messages/:id/cancel", app.PermCancelMessage, s.handleMessageCancel)
	t.get("/events/:id", app.PermMessages, s.handleEventShow)

	// The inbox: conversations passengers wrote in, and answers to them.
	t.get("/inbox", app.PermMessages, s.handleInbox)
	t.get("/inbox/:id", app.PermMessages, s.handleConversation)
	t.post("/inbox/:id/reply", app.PermReply, s.handleConversationReply)
	t.post("/inbox/:id/status", app.PermReply, s.handleConversationStatus)
	t.post("/inbox/:id/assign", app.PermReply, s.handleConversationAssign)

	// Rejected API requests.
	t.get("/requests", app.PermMessages, s.handleRequestList)
	t.get("/requests/:id", app.PermMessages, s.handleRequestShow)

	// Contacts.
	t.get("/contacts/:id", app.PermMessages, s.handleContactShow)
	t.post("/contacts/:id/opt-out", app.PermContacts, s.handleContactOptOut)
	t.post("/contacts/:id/opt-in", app.PermContacts, s.handleContactOptIn)
	t.post("/contacts/:id/erase", app.PermEraseContacts, s.handleContactErase)

	// Scheduled notifications, approvals and the tenant's audit log.
	t.get("/scheduled", app.PermSchedules, s.handleScheduledList)
	t.get("/scheduled/:id", app.PermSchedules, s.handleScheduledShow)
	t.post("/scheduled/:id/reschedule", app.PermManageSchedules, s.handleScheduledReschedule)
	t.post("/scheduled/:id/cancel", app.PermManageSchedules, s.handleScheduledCancel)
	t.get("/approvals", app.PermSchedules, s.handleApprovalList)
	t.get("/approvals/:id", app.PermSchedules, s.handleApprovalShow)
	t.post("/approvals/:id/approve", app.PermApprove, s.handleApprovalApprove)
	t.post("/approvals/:id/reject", app.PermApprove, s.handleApprovalReject)
	t.get("/audit", app.PermAudit, s.handleTenantAudit)

	// Passenger lists by upload: the form's body is streamed to its reader.
	t.get("/uploads", app.PermSchedules, s.handleUploads)
	t.post("/uploads", app.PermManageSchedules, s.handleUploadCreate)
	t.get("/uploads/:id", app.PermSchedules, s.handleUploadShow)
	t.post("/uploads/:id/start", app.PermManageSchedules, s.handleUploadStart)
	t.get("/uploads/:id/errors", app.PermSchedules, s.handleUploadErrors)

	// Settings, users and API keys.
	t.get("/settings", app.PermSettings, s.handleSettings)
	t.post("/settings", app.PermSettings, s.handleSettingsUpdate)
	t.post("/settings/deadlines", app.PermSettings, s.handleDeadlineChange)
	t.post("/settings/confirmation-windows", app.PermSettings, s.handleConfirmWindowChange)
	t.get("/settings/branding", app.PermSettings, s.handleBranding)
	t.post("/settings/branding", app.PermSettings, s.handleBrandingUpdate)
	t.get("/settings/alerts", app.PermSettings, s.handleAlertSettings)
	t.post("/settings/alerts", app.PermSettings, s.handleAlertSettingsUpdate)
	t.get("/settings/callbacks", app.PermCallbacks, s.handleCallbacks)
	t.post("/settings/callbacks", app.PermCallbacks, s.handleCallbackCreate)
	t.get("/settings/callbacks/:id", app.PermCallbacks, s.handleCallbackShow)
	t.post("/settings/callbacks/:id/enable", app.PermCallbacks, s.handleCallbackEnable)
	t.post("/settings/callbacks/:id/disable", app.PermCallbacks, s.handleCallbackDisable)
	t.post("/settings/callbacks/:id/rotate", app.PermCallbacks, s.handleCallbackRotate)
	t.post("/settings/callbacks/:id/test", app.PermCallbacks, s.handleCallbackTest)
	t.post("/settings/callbacks/:id/delete", app.PermCallbacks, s.handleCallbackDelete)
	t.post("/settings/callbacks/:id/deliveries/:delivery/replay", app.PermCallbacks, s.handleCallbackReplay)
	t.get("/users", app.PermUsers, s.handleUsers)
	t.post("/users", app.PermUsers, s.handleUserCreate)
	t.post("/users/two-factor", app.PermUsers, s.handleTenantTwoFactorRequire)
	t.get("/users/new", app.PermUsers, s.handleUserNew)
	t.get("/users/:id", app.PermUsers, s.handleUserShow)
	t.post("/users/:id/role", app.PermUsers, s.handleUserRole)
	t.post("/users/:id/disable", app.PermUsers, s.handleUserDisable)
	t.post("/users/:id/enable", app.PermUsers, s.handleUserEnable)
	t.post("/users/:id/reset-password", app.PermUsers, s.handleUserResetPassword)
	t.post("/users/:id/reset-two-factor", app.PermUsers, s.handleUserTwoFactorReset)
	t.get("/api-keys", app.PermAPIKeys, s.handleAPIKeys)
	t.post("/api-keys", app.PermAPIKeys, s.handleAPIKeyCreate)
	t.post("/api-keys/:id/revoke", app.PermAPIKeys, s.handleAPIKeyRevoke)
	t.get("/api-reference", app.PermAPIKeys, s.handleAPIReference)

}
