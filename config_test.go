package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// envFrom is a getenv over m.
func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()

	t.Run("DevDefaults", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(nil))
		require.NoError(t, err)
		require.True(t, c.Dev())
		require.Equal(t, ":8080", c.Addr)
		require.Equal(t, "http://localhost:8080", c.BaseURL.String())
		require.Equal(t, app.DefaultDatabaseURL, c.DatabaseURL)
		require.Equal(t, app.DefaultOwnerDatabaseURL, c.MigrateDatabaseURL, "migrate connects as the local cluster's owner")
		require.Equal(t, "herald_app", c.RuntimeRole())
		require.Equal(t, "text", c.LogFormat)
		require.Nil(t, c.SecretKey, "dev leaves the key for loadConfig to generate")
		require.Equal(t, app.DefaultWorkers[app.QueueRoute], c.Workers[app.QueueRoute])
		require.Equal(t, 100, c.Quotas[app.PlanFree][app.Email])
		require.Equal(t, app.Unlimited, c.Quotas[app.PlanEnterprise][app.Email])
		require.Equal(t, 5*time.Second, c.APIKeyCacheTTL)
		require.Equal(t, app.DefaultJobTimeout, c.JobTimeout)
		require.Equal(t, app.DefaultRescueStuckAfter, c.RescueStuckAfter)
		require.Equal(t, app.DefaultSendTimeout, c.SendTimeout)
		require.GreaterOrEqual(t, c.RescueStuckAfter, app.DispatchTimeout(c.JobTimeout, c.SendTimeout)+app.RecordSentRetryFor,
			"a running send is never rescued")
		require.False(t, c.WebhookAllowPrivate)
		require.Equal(t, app.QuietHours{Start: 21 * 60, End: 8 * 60}, c.QuietHours, "new tenants' quiet hours: 21:00-08:00")
	})

	t.Run("DatabaseRoles", func(t *testing.T) {
		t.Parallel()
		const runtime, owner = "postgres://app:pw@db.internal:5432/herald", "postgres://owner:pw@db.internal:5432/herald"
		c, err := configFromEnv(envFrom(map[string]string{"DATABASE_URL": runtime}))
		require.NoError(t, err)
		require.Equal(t, runtime, c.MigrateDatabaseURL, "another server: not the local cluster's owner")
		c, err = configFromEnv(envFrom(map[string]string{"DATABASE_URL": runtime, "MIGRATE_DATABASE_URL": owner}))
		require.NoError(t, err)
		require.Equal(t, runtime, c.DatabaseURL)
		require.Equal(t, owner, c.MigrateDatabaseURL)
		require.Equal(t, "app", c.RuntimeRole(), "migrate grants the role web, worker and serve use")
		_, err = configFromEnv(envFrom(map[string]string{"MIGRATE_DATABASE_URL": "mysql://x"}))
		require.EqualError(t, err, "MIGRATE_DATABASE_URL must be a postgres:// URL")
	})

	t.Run("QuietHours", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{"HERALD_QUIET_HOURS": "22:30-07:00"}))
		require.NoError(t, err)
		require.Equal(t, app.QuietHours{Start: 22*60 + 30, End: 7 * 60}, c.QuietHours)
		c, err = configFromEnv(envFrom(map[string]string{"HERALD_QUIET_HOURS": "off"}))
		require.NoError(t, err)
		require.True(t, c.QuietHours.Off())
	})

	t.Run("JobBounds", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{"HERALD_JOB_TIMEOUT": "40s", "HERALD_RESCUE_STUCK_AFTER": "2m"}))
		require.NoError(t, err)
		require.Equal(t, 40*time.Second, c.JobTimeout)
		require.Equal(t, 2*time.Minute, c.RescueStuckAfter)
	})

	t.Run("WebhookAllowPrivateInDev", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{"HERALD_WEBHOOK_ALLOW_PRIVATE": "true"}))
		require.NoError(t, err)
		require.True(t, c.WebhookAllowPrivate)
	})

	t.Run("APIKeyCacheOff", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{"HERALD_API_KEY_CACHE_TTL": "0s"}))
		require.NoError(t, err)
		require.Zero(t, c.APIKeyCacheTTL)
	})

	t.Run("QuotaOverrides", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{"HERALD_QUOTA_FREE_SMS": "7", "HERALD_QUOTA_PRO_WHATSAPP": "unlimited"}))
		require.NoError(t, err)
		require.Equal(t, 7, c.Quotas[app.PlanFree][app.SMS])
		require.Equal(t, app.Unlimited, c.Quotas[app.PlanPro][app.WhatsApp])
		require.Equal(t, 50, c.Quotas[app.PlanFree][app.WhatsApp], "others keep their defaults")
	})

	t.Run("ProdComplete", func(t *testing.T) {
		t.Parallel()
		c, err := configFromEnv(envFrom(map[string]string{
			"HERALD_ENV":           "prod",
			"DATABASE_URL":         "postgres://u:p@db:5432/herald",
			"HERALD_BASE_URL":      "https://herald.example.com/",
			"HERALD_SECRET_KEY":    "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
			"HERALD_SESSION_KEY":   "0123456789abcdef0123456789abcdef",
			"HERALD_WORKERS_ROUTE": "7",
		}))
		require.NoError(t, err)
		require.Equal(t, "json", c.LogFormat)
		require.Len(t, c.SecretKey, 32)
		require.Equal(t, "https://herald.example.com", c.BaseURL.String())
		require.Equal(t, 7, c.Workers[app.QueueRoute])
	})

	prod := map[string]string{
		"HERALD_ENV":         "prod",
		"DATABASE_URL":       "postgres://u:p@db:5432/herald",
		"HERALD_BASE_URL":    "https://herald.example.com",
		"HERALD_SECRET_KEY":  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"HERALD_SESSION_KEY": "0123456789abcdef0123456789abcdef",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range prod {
			m[a] = b
		}
		m[k] = v
		return m
	}

	// Each bad value stops start-up with a message naming its variable.
	for name, tc := range map[string]struct {
		env      map[string]string
		variable string
	}{
		"BadEnv":             {map[string]string{"HERALD_ENV": "staging"}, "HERALD_ENV"},
		"BadAddr":            {map[string]string{"HERALD_ADDR": "8080"}, "HERALD_ADDR"},
		"BadPort":            {map[string]string{"HERALD_ADDR": ":http-alt"}, "HERALD_ADDR"},
		"RelativeBaseURL":    {map[string]string{"HERALD_BASE_URL": "herald.example.com"}, "HERALD_BASE_URL"},
		"BadDatabaseURL":     {map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		"ShortSecretKey":     {map[string]string{"HERALD_SECRET_KEY": "c2hvcnQ="}, "HERALD_SECRET_KEY"},
		"NotBase64SecretKey": {map[string]string{"HERALD_SECRET_KEY": "!!!"}, "HERALD_SECRET_KEY"},
		"ShortSessionKey":    {map[string]string{"HERALD_SESSION_KEY": "short"}, "HERALD_SESSION_KEY"},
		"AdminEmailAlone":    {map[string]string{"HERALD_ADMIN_EMAIL": "a@b.de"}, "HERALD_ADMIN_PASSWORD"},
		"BadLogLevel":        {map[string]string{"HERALD_LOG_LEVEL": "loud"}, "HERALD_LOG_LEVEL"},
		"BadLogFormat":       {map[string]string{"HERALD_LOG_FORMAT": "xml"}, "HERALD_LOG_FORMAT"},
		"ZeroWorkers":        {map[string]string{"HERALD_WORKERS_DISPATCH_EMAIL": "0"}, "HERALD_WORKERS_DISPATCH_EMAIL"},
		"NonNumericWorkers":  {map[string]string{"HERALD_WORKERS_ROUTE": "many"}, "HERALD_WORKERS_ROUTE"},
		"BadShutdownTimeout": {map[string]string{"HERALD_SHUTDOWN_TIMEOUT": "soon"}, "HERALD_SHUTDOWN_TIMEOUT"},
		"BadQuietHours":      {map[string]string{"HERALD_QUIET_HOURS": "21-8"}, "HERALD_QUIET_HOURS"},
		"QuietHoursOneEnd":   {map[string]string{"HERALD_QUIET_HOURS": "21:00"}, "HERALD_QUIET_HOURS"},
		"ProdWithoutDB":      {with("DATABASE_URL", ""), "DATABASE_URL"},
		"ProdWithoutSecret":  {with("HERALD_SECRET_KEY", ""), "HERALD_SECRET_KEY"},
		"ProdWithoutSession": {with("HERALD_SESSION_KEY", ""), "HERALD_SESSION_KEY"},
		"ProdWithoutBaseURL": {with("HERALD_BASE_URL", ""), "HERALD_BASE_URL"},
		"ProdWithPlainHTTP":  {with("HERALD_BASE_URL", "http://herald.example.com"), "HERALD_BASE_URL"},
		"BadSecretKeyID":     {map[string]string{"HERALD_SECRET_KEY_ID": "has space"}, "HERALD_SECRET_KEY_ID"},
		"LongAPIKeyCache":    {map[string]string{"HERALD_API_KEY_CACHE_TTL": "1h"}, "HERALD_API_KEY_CACHE_TTL"},
		"BadJobTimeout":      {map[string]string{"HERALD_JOB_TIMEOUT": "0s"}, "HERALD_JOB_TIMEOUT"},
		"BadRescue":          {map[string]string{"HERALD_RESCUE_STUCK_AFTER": "forever"}, "HERALD_RESCUE_STUCK_AFTER"},
		// A send still running (or recording its result) would be rescued
		// and sent a second time beside itself.
		"RescueBeforeTimeout":  {map[string]string{"HERALD_JOB_TIMEOUT": "30s", "HERALD_RESCUE_STUCK_AFTER": "40s"}, "HERALD_RESCUE_STUCK_AFTER"},
		"RescueBeforeTwoSends": {map[string]string{"HERALD_SEND_TIMEOUT": "30s", "HERALD_RESCUE_STUCK_AFTER": "80s"}, "2 x HERALD_SEND_TIMEOUT (30s)"},
		"SendTimeoutTooLong":   {map[string]string{"HERALD_SEND_TIMEOUT": "6m"}, "HERALD_SEND_TIMEOUT"},
		"BadAllowPrivate":      {map[string]string{"HERALD_WEBHOOK_ALLOW_PRIVATE": "sure"}, "HERALD_WEBHOOK_ALLOW_PRIVATE"},
		"ProdWithAllowPrivate": {with("HERALD_WEBHOOK_ALLOW_PRIVATE", "true"), "HERALD_WEBHOOK_ALLOW_PRIVATE"},
		"BadMetricsAddr":       {map[string]string{"HERALD_METRICS_ADDR": "9091"}, "HERALD_METRICS_ADDR"},
		"ShortMetricsToken":    {map[string]string{"HERALD_METRICS_TOKEN": "short"}, "HERALD_METRICS_TOKEN"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := configFromEnv(envFrom(tc.env))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.variable)
		})
	}
}

// TestConfigTable checks the table itself, since the help is printed from it.
func TestConfigTable(t *testing.T) {
	t.Parallel()

	seen := map[string]bool{}
	for _, v := range envVars() {
		require.NotEmpty(t, v.Name)
		require.False(t, seen[v.Name], "%s is listed twice", v.Name)
		seen[v.Name] = true
		require.NotEmpty(t, strings.TrimSpace(v.Usage), "%s has no description", v.Name)
		require.NotContains(t, v.Usage, "\n", "%s: the description is one line", v.Name)
		require.NotNil(t, v.ParseFunc, "%s has no parser", v.Name)
		if v.Default != "" {
			// A default the parser refused would stop every start without the variable.
			c := newConfig()
			require.NoError(t, v.ParseFunc(&c, v.Default), v.Name)
		}
	}
	for q := range app.DefaultWorkers {
		require.True(t, seen["HERALD_WORKERS_"+strings.ToUpper(q)], "queue %s has a row", q)
	}
	for plan, limits := range app.DefaultQuotas {
		for ch := range limits {
			require.True(t, seen["HERALD_QUOTA_"+plan+"_"+string(ch)], "quota %s %s has a row", plan, ch)
		}
	}
}
