package app_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// TestAPIKey_ScopePermissions checks what each scope lets a key do through
// the services the console shares with the API: reading never includes
// changing, and only approve decides.
func TestAPIKey_ScopePermissions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scope string
		may   []app.Permission
	}{
		{app.ScopeSend, []app.Permission{app.PermResend, app.PermReply}},
		{app.ScopeRead, []app.Permission{app.PermMessages, app.PermSchedules, app.PermAddresses, app.PermViewTemplates, app.PermViewChannels}},
		{app.ScopeManage, []app.Permission{app.PermTemplates, app.PermChannels, app.PermManageSchedules}},
		{app.ScopeApprove, []app.Permission{app.PermApprove}},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			k := &app.APIKey{ID: uuid.New(), TenantID: uuid.New(), Scopes: app.StringList{tc.scope}}
			for _, p := range app.Permissions[app.RoleOperator] {
				require.Equal(t, slices.Contains(tc.may, p), k.Can(p), "scope %s and permission %s", tc.scope, p)
			}
			if len(tc.may) > 0 {
				require.NoError(t, app.RequirePermission(k, tc.may[0]))
			}
			err := app.RequirePermission(k, app.PermUsers)
			require.Equal(t, app.EFORBIDDEN, app.ErrorCode(err))
			require.Equal(t, "insufficient_scope", app.ErrorReason(err))
			require.True(t, k.CanOpenTenant(k.TenantID))
			require.False(t, k.CanOpenTenant(uuid.New()), "a key works in its own tenant only")
		})
	}

	t.Run("RevokedKeyMayNothing", func(t *testing.T) {
		now := time.Now()
		k := &app.APIKey{Scopes: app.StringList(app.Scopes), RevokedAt: &now}
		require.False(t, k.Can(app.PermTemplates))
	})
}

func TestNormalizeScopes(t *testing.T) {
	t.Parallel()
	got, err := app.NormalizeScopes([]string{" Approve", "send", "send"})
	require.NoError(t, err)
	require.Equal(t, []string{"send", "approve"}, got, "known, without repeats, in the order of Scopes")

	_, err = app.NormalizeScopes(nil)
	require.Equal(t, "missing_scope", app.ErrorReason(err))
	require.Equal(t, "scopes", app.ErrorField(err))
	_, err = app.NormalizeScopes([]string{"send", "admin"})
	require.Equal(t, "unknown_scope", app.ErrorReason(err))
}
