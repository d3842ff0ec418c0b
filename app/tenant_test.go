package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestTenantInput_Normalize(t *testing.T) {
	t.Parallel()
	in := app.TenantInput{Slug: " Acme-Tours ", Name: " Acme ", Plan: "pro", DefaultLocale: "en-gb"}
	require.NoError(t, in.Normalize())
	require.Equal(t, app.TenantInput{Slug: "acme-tours", Name: "Acme", Plan: "PRO", DefaultLocale: "en-GB", Timezone: "Europe/Berlin"}, in)

	for name, tc := range map[string]struct {
		in    app.TenantInput
		field string
	}{
		"NoSlug":       {app.TenantInput{Name: "x"}, "slug"},
		"BadSlug":      {app.TenantInput{Slug: "a b", Name: "x"}, "slug"},
		"TrailingDash": {app.TenantInput{Slug: "ab-", Name: "x"}, "slug"},
		"Reserved":     {app.TenantInput{Slug: "api", Name: "x"}, "slug"},
		"NoName":       {app.TenantInput{Slug: "ok"}, "name"},
		"BadPlan":      {app.TenantInput{Slug: "ok", Name: "x", Plan: "GOLD"}, "plan"},
		"BadLocale":    {app.TenantInput{Slug: "ok", Name: "x", DefaultLocale: "xx_not!"}, "locale"},
		"BadTimezone":  {app.TenantInput{Slug: "ok", Name: "x", Timezone: "Mars/Olympus"}, "timezone"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tc.in.Normalize()
			require.Equal(t, app.EINVALID, app.ErrorCode(err))
			require.Equal(t, tc.field, app.ErrorField(err))
		})
	}
}
