// Package console holds the console's services: sign-in and sessions, the
// dashboard, the booking panel and message explorer, scheduled events and
// approvals, templates with their history, channel accounts, queues, the audit
// log, the administration of tenants, users and API keys, and the tenant's
// status callback endpoints. Each service checks the signed-in user's
// permission, runs in a store of its own (DashboardTx, AccountTx, ...) and
// builds on the pipeline's services in app; web's console handlers call them
// and views render what they return.
package console
