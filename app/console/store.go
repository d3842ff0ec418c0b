package console

import "github.com/heraldhq/herald/app"

// Tx is every statement the console's services run: the pipeline's stores
// and the console's own queries.
type Tx interface {
	app.PipelineTx
	SessionStore
	DashboardStore
	QueueStore
	ChannelStore
	TemplateConsoleStore
	ConsoleMessageStore
	ScheduleStore
	AuditLogStore
	TenantAdminStore
	UserAdminStore
	APIKeyAdminStore
}

// Store opens the console's transactions.
type Store = app.Store[Tx]
