// Package app is Herald's domain: the entities (tenants, users, API keys,
// channel accounts, templates, events, contacts, messages), the event
// registry, and the pipeline that turns an accepted event into delivered
// messages: Intake stores it with its route job, Router plans one message per
// recipient and channel, Dispatcher sends each through its provider behind
// quotas, rate limits and breakers, Receipts moves it to DELIVERED, READ or
// FAILED, and Maintenance rescues, marks stale and prunes.
//
// app defines the interfaces it needs and nothing of how they are met: each
// service names the statements it runs in a transaction interface of its own
// (RouteTx, DispatchTx, ...), which db implements on Postgres; the job queue
// (Queue) is River in package jobs; providers implement provider.Provider
// in app/provider/... . app imports no HTTP framework, queue, SQL or template
// library (TestLayering checks it). The console's services live in
// app/console, and app/wire builds all of it for the herald binary and tests.
package app
