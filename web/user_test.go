package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// userIDByEmail reads a user's id from the database.
func (c *consoleBundle) userIDByEmail(email string) uuid.UUID {
	c.T.Helper()
	var id uuid.UUID
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		users, err := tx.UsersByEmail(c.Ctx, email)
		if err == nil {
			require.Len(c.T, users, 1, "one account under %s", email)
			id = users[0].ID
		}
		return err
	}))
	return id
}

// temporaryPassword reads the password a temporary-password page shows.
func temporaryPassword(t *testing.T, doc *goquery.Document) string {
	t.Helper()
	pw := doc.Find("input.secret-value").AttrOr("value", "")
	require.Len(t, pw, 24, "five groups of four characters: %q", pw)
	return pw
}

// addUser adds a user through the console and returns the temporary password.
func addUser(t *testing.T, s *session, name, email, role string) string {
	t.Helper()
	s.page("/t/acme/users/new")
	doc, resp := s.postPage("/t/acme/users", url.Values{"name": {name}, "email": {email}, "role": {role}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return temporaryPassword(t, doc)
}

func TestConsoleUsers_List(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	doc := manager.page("/t/acme/users")
	emails := doc.Find("table.user-list td.email").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	require.ElementsMatch(t, []string{"manager@acme.test", "support@acme.test"}, emails, "only acme's users: no operator, no globex user")
	me := doc.Find(`tr[data-user="` + c.users[asManager].ID.String() + `"]`)
	require.Contains(t, text(me), "(you)")
	require.Equal(t, "manager", text(me.Find("td.role")))
	require.Equal(t, "ACTIVE", text(me.Find(".badge")))
	require.NotEqual(t, "–", text(me.Find("td").Eq(4)), "the last sign-in is shown")
	require.Equal(t, 1, doc.Find(`.page-head a[href="/t/acme/users/new"]`).Length())

	_, resp := c.signIn(asSupport).get("/t/acme/users")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, resp = c.signIn(asOtherManager).get("/t/acme/users")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Operators manage users inside any tenant.
	doc = c.signIn(asOperator).page("/t/globex/users")
	require.Equal(t, "manager@globex.test", text(doc.Find("td.email")))
}

func TestConsoleUsers_Create(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	t.Run("Form", func(t *testing.T) {
		doc := manager.page("/t/acme/users/new")
		require.Contains(t, text(doc.Find(".page-head")), "Herald sends no invitation e-mail")
		roles := doc.Find(`select[name=role] option`).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") })
		require.Equal(t, []string{"manager", "support"}, roles, "no operators inside a tenant")
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		users := c.Count(`SELECT count(*) FROM users`)
		for _, tc := range []struct {
			field, value, control, want string
			status                      int
		}{
			{"email", "manager@acme.test", "input[name=email]", "A user with this e-mail address already exists.", 409},
			{"email", "MANAGER@acme.test", "input[name=email]", "already exists", 409},
			{"email", "not an address", "input[name=email]", "is not a valid e-mail address", 422},
			{"email", "anna@localhost", "input[name=email]", "is not a valid e-mail address", 422},
			{"email", "", "input[name=email]", "E-mail address is required.", 422},
			{"role", "operator", "select[name=role]", "Operators run the platform and belong to no tenant", 422},
			{"role", "admin", "select[name=role]", `Role "admin" is not one of manager, support.`, 422},
			{"role", "", "select[name=role]", "Choose a role", 422},
			{"name", " ", "input[name=name]", "Name is required", 422},
			{"name", strings.Repeat("n", 201), "input[name=name]", "at most 200 characters", 422},
		} {
			form := url.Values{"name": {"Anna Berg"}, "email": {"anna@acme.test"}, "role": {"support"}}
			form.Set(tc.field, tc.value)
			manager.page("/t/acme/users/new")
			doc, resp := manager.postPage("/t/acme/users", form)
			require.Equal(t, tc.status, resp.StatusCode, "%s=%q", tc.field, tc.value)
			require.Contains(t, fieldError(doc, tc.control), tc.want, "%s=%q", tc.field, tc.value)
			require.Equal(t, 0, doc.Find("input.secret-value").Length())
			if tc.field != "role" {
				require.Equal(t, tc.value, doc.Find(`input[name=`+tc.field+`]`).AttrOr("value", "x"), "the form keeps what was typed")
			}
		}
		require.Equal(t, users, c.Count(`SELECT count(*) FROM users`))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.create' AND actor_type = 'user'`))
	})

	t.Run("WithoutCSRFRefused", func(t *testing.T) {
		manager.page("/t/acme/users/new")
		resp := manager.post("/t/acme/users", url.Values{"csrf": {"forged"}, "name": {"Eve"}, "email": {"eve@acme.test"}, "role": {"manager"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM users WHERE email = 'eve@acme.test'`))
	})

	t.Run("TemporaryPasswordShownOnce", func(t *testing.T) {
		manager.page("/t/acme/users/new")
		resp := manager.post("/t/acme/users", url.Values{"name": {"Anna Berg"}, "email": {"Anna.Berg@Acme.test"}, "role": {"support"}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "shown in the answer itself, not behind a redirect")
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		for _, ck := range resp.Cookies() {
			require.NotEqual(t, "herald_flash", ck.Name)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		password := temporaryPassword(t, doc)
		require.Contains(t, text(doc.Find(".one-time-secret")), "Herald sends no e-mail")
		require.Contains(t, text(doc.Find(".secret-note")), "only time it is shown")

		id := c.userIDByEmail("anna.berg@acme.test")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND tenant_id = $2 AND role = 'support' AND name = 'Anna Berg' AND must_change_password`, id, c.Tenant.ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'user.create' AND target_id = $2 AND actor_id = $3`, c.Tenant.ID, id.String(), c.users[asManager].ID))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, password))

		list := manager.page("/t/acme/users")
		require.NotContains(t, list.Text(), password)
		require.Contains(t, text(list.Find(`tr[data-user="`+id.String()+`"]`)), "temporary password")
		require.NotContains(t, manager.page("/t/acme/users/"+id.String()).Text(), password)

		// The temporary password signs in once, and only to choose a
		// password of one's own.
		anna := c.anonymous()
		resp = anna.login("anna.berg@acme.test", password)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		_, resp = anna.get(resp.Header.Get("Location"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/account/password", resp.Header.Get("Location"))
		doc = anna.follow(resp)
		require.Contains(t, text(doc.Find(".flash-warning")), "temporary password")
		for _, path := range []string{"/t/acme/", "/t/acme/users", "/"} {
			_, resp = anna.get(path)
			require.Equal(t, "/account/password", resp.Header.Get("Location"), "nothing else until the password is changed: %s", path)
		}

		anna.page("/account/password")
		resp = anna.post("/account/password", url.Values{"current": {password}, "new": {"annas own secret"}, "confirm": {"annas own secret"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		anna.follow(resp)
		anna.page("/t/acme/")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND NOT must_change_password`, id))
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("anna.berg@acme.test", password).StatusCode, "the temporary password is spent")
		require.Equal(t, http.StatusSeeOther, c.anonymous().login("anna.berg@acme.test", "annas own secret").StatusCode)
	})

	t.Run("OperatorAddsManager", func(t *testing.T) {
		ops := c.signIn(asOperator)
		ops.page("/t/globex/users/new")
		doc, resp := ops.postPage("/t/globex/users", url.Values{"name": {"Gina"}, "email": {"gina@globex.test"}, "role": {"manager"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		temporaryPassword(t, doc)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE email = 'gina@globex.test' AND tenant_id = $1 AND role = 'manager'`, c.other.ID))
	})
}

func TestConsoleUsers_Role(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager, ops := c.signIn(asManager), c.signIn(asOperator)
	support := c.users[asSupport].ID.String()
	boss := c.users[asManager].ID.String()

	t.Run("OwnRoleFixed", func(t *testing.T) {
		doc := manager.page("/t/acme/users/" + boss)
		require.Equal(t, 0, doc.Find(`select[name=role]`).Length(), "no role form for oneself")
		require.Equal(t, 0, doc.Find(`form[action$="/disable"]`).Length())
		doc, resp := manager.postPage("/t/acme/users/"+boss+"/role", url.Values{"role": {"support"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "You cannot change your own role")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND role = 'manager'`, boss))
	})

	t.Run("LastManagerStays", func(t *testing.T) {
		// The operator is no tenant user, so only the last-manager rule
		// stands in the way.
		ops.page("/t/acme/users/" + boss)
		doc, resp := ops.postPage("/t/acme/users/"+boss+"/role", url.Values{"role": {"support"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, fieldError(doc, "select[name=role]"), "last active manager")
		doc, resp = ops.postPage("/t/acme/users/"+boss+"/disable", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "last active manager")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND role = 'manager' AND disabled_at IS NULL`, boss))
	})

	t.Run("BadRole", func(t *testing.T) {
		manager.page("/t/acme/users/" + support)
		for _, role := range []string{"operator", "owner", ""} {
			doc, resp := manager.postPage("/t/acme/users/"+support+"/role", url.Values{"role": {role}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, role)
			require.NotEmpty(t, fieldError(doc, "select[name=role]"), role)
		}
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND role = 'support'`, support))
	})

	t.Run("Promote", func(t *testing.T) {
		manager.page("/t/acme/users/" + support)
		resp := manager.post("/t/acme/users/"+support+"/role", url.Values{"role": {"manager"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "support@acme.test is now manager")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND role = 'manager'`, support))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.role_change' AND target_id = $1
			AND metadata->>'from' = 'support' AND metadata->>'to' = 'manager' AND actor_id = $2`, support, boss))

		// The promoted user holds the new permissions at their next request.
		promoted := c.signIn(asSupport)
		promoted.page("/t/acme/users")

		// Now there are two managers, the first may be made support.
		ops.page("/t/acme/users/" + boss)
		require.Equal(t, http.StatusSeeOther, ops.post("/t/acme/users/"+boss+"/role", url.Values{"role": {"support"}}).StatusCode)
		_, resp = manager.get("/t/acme/users")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "a demoted manager loses the page at once")
	})
}

func TestConsoleUsers_DisableAndReset(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)
	support := c.users[asSupport].ID.String()

	t.Run("CannotDisableSelf", func(t *testing.T) {
		manager.page("/t/acme/users")
		doc, resp := manager.postPage("/t/acme/users/"+c.users[asManager].ID.String()+"/disable", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "You cannot disable your own account")
		doc, resp = manager.postPage("/t/acme/users/"+c.users[asManager].ID.String()+"/reset-password", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Equal(t, 0, doc.Find("input.secret-value").Length())
	})

	t.Run("DisableEndsSessions", func(t *testing.T) {
		staff := c.signIn(asSupport)
		staff.page("/t/acme/")

		doc := manager.page("/t/acme/users/" + support)
		form := doc.Find(`form[action="/t/acme/users/` + support + `/disable"]`)
		require.Contains(t, form.AttrOr("data-confirm", ""), "signed out at once", "disabling asks first")
		resp := manager.post("/t/acme/users/"+support+"/disable", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "disabled and signed out")
		require.Equal(t, "DISABLED", text(doc.Find("dl.facts .badge")))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.disable' AND target_id = $1`, support))

		_, resp = staff.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the live session ended")
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("support@acme.test", consolePassword).StatusCode)

		manager.page("/t/acme/users/" + support)
		resp = manager.post("/t/acme/users/"+support+"/enable", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "ACTIVE", text(manager.follow(resp).Find("dl.facts .badge")))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.enable' AND target_id = $1`, support))
		c.signIn(asSupport).page("/t/acme/")
	})

	t.Run("ResetPassword", func(t *testing.T) {
		staff := c.signIn(asSupport)
		staff.page("/t/acme/")

		manager.page("/t/acme/users/" + support)
		resp := manager.post("/t/acme/users/"+support+"/reset-password", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		password := temporaryPassword(t, doc)
		require.Contains(t, text(doc.Find(".page-head")), "every session they had has ended")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, password))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_reset' AND target_id = $1`, support))

		_, resp = staff.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the live session ended")
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("support@acme.test", consolePassword).StatusCode, "the old password no longer works")

		s := c.anonymous()
		resp = s.login("support@acme.test", password)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		_, resp = s.get("/t/acme/")
		require.Equal(t, "/account/password", resp.Header.Get("Location"))
	})

	t.Run("AnotherTenantsUser", func(t *testing.T) {
		globex := c.users[asOtherManager].ID.String()
		_, resp := manager.get("/t/acme/users/" + globex)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = manager.get("/t/acme/users/" + uuid.NewString())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = manager.get("/t/acme/users/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		manager.page("/t/acme/users")
		for _, action := range []string{"disable", "reset-password", "role", "enable"} {
			resp = manager.post("/t/acme/users/"+globex+"/"+action, url.Values{"role": {"support"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, action)
		}
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id = $1 AND role = 'manager' AND disabled_at IS NULL AND NOT must_change_password`, globex))
		// The operator's own account is not a tenant user either.
		_, resp = manager.get("/t/acme/users/" + c.users[asOperator].ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		c.signIn(asOtherManager).page("/t/globex/")
	})
}

// TestConsoleUsers_OpposingManagers has the tenant's two managers each take
// the other away at the same moment, round after round: the requests run
// one after the other, so exactly one goes through, the other is refused
// with a readable answer (never a 500 from a deadlock), and the tenant
// always keeps an active manager.
func TestConsoleUsers_OpposingManagers(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	a, b := c.users[asManager].ID.String(), c.users[asSupport].ID.String()
	c.Exec(`UPDATE users SET role = 'manager' WHERE id = $1`, b)
	sessions := map[string]*session{a: c.signIn(asManager), b: c.signIn(asSupport)}
	who := map[string]string{a: asManager, b: asSupport}

	for round := range 20 {
		// Even rounds demote, odd rounds disable.
		action := "role"
		if round%2 == 1 {
			action = "disable"
		}
		c.Exec(`UPDATE users SET role = 'manager', disabled_at = NULL WHERE id IN ($1, $2)`, a, b)
		for id, s := range sessions {
			if _, resp := s.get("/t/acme/users"); resp.StatusCode != http.StatusOK {
				sessions[id] = c.signIn(who[id]) // disabled in an earlier round
			}
			sessions[id].page("/t/acme/users")
		}

		type answer struct {
			status   int
			location string
			body     string
		}
		answers := map[string]answer{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for actor, target := range map[string]string{a: b, b: a} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resp := sessions[actor].post("/t/acme/users/"+target+"/"+action, url.Values{"role": {"support"}})
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				answers[actor] = answer{resp.StatusCode, resp.Header.Get("Location"), string(body)}
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()

		won := 0
		for actor, ans := range answers {
			require.Less(t, ans.status, 500, "round %d (%s): %s answered %d", round, action, actor, ans.status)
			switch ans.status {
			case http.StatusSeeOther:
				if strings.HasPrefix(ans.location, "/login") {
					// Disabled by the winner before this request
					// loaded its session, which has ended.
					require.Equal(t, "disable", action, "round %d", round)
					break
				}
				require.Equal(t, "/t/acme/users/"+map[string]string{a: b, b: a}[actor], ans.location, "round %d (%s)", round, action)
				won++
			case http.StatusConflict:
				require.Contains(t, ans.body, "last active manager", "round %d (%s)", round, action)
			case http.StatusForbidden:
				// The winner's change landed before this request loaded
				// its user: a support user may not manage users.
			default:
				t.Fatalf("round %d (%s): %s answered %d", round, action, actor, ans.status)
			}
		}
		require.Equal(t, 1, won, "round %d (%s): exactly one of the two goes through: %v", round, action, answers)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE id IN ($1, $2) AND role = 'manager' AND disabled_at IS NULL`, a, b),
			"round %d (%s): the tenant keeps one active manager", round, action)
	}
	require.Equal(t, 10, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.role_change'`))
	require.Equal(t, 10, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.disable'`))
}

func TestConsoleUsers_AddressOfAnotherTenant(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	// accounts gives the address an account in globex with consolePassword
	// and invites it to acme through the console. The acme account keeps
	// its temporary password, which it returns, or with samePassword takes
	// consolePassword too.
	accounts := func(t *testing.T, email string, samePassword bool) (acmeID, globexID uuid.UUID, temporary string) {
		g, err := c.Services.Users.Create(c.Ctx, app.CLIActor, app.UserInput{Email: email, Password: consolePassword, Role: app.RoleSupport, TenantSlug: "globex"})
		require.NoError(t, err)
		manager.page("/t/acme/users/new")
		doc, resp := manager.postPage("/t/acme/users", url.Values{"name": {"Gabi"}, "email": {email}, "role": {"support"}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "an address used elsewhere is invited like any other")
		require.Zero(t, doc.Find(".field-error").Length())
		temporary = temporaryPassword(t, doc)
		require.NoError(t, c.Services.Store.InTenant(c.Ctx, c.Tenant.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `SELECT id FROM users WHERE tenant_id = $1 AND email = $2`, c.Tenant.ID, email).Scan(&acmeID)
		}))
		if samePassword {
			var a *app.User
			require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) (err error) {
				a, err = tx.UserByID(c.Ctx, acmeID)
				return err
			}))
			require.NoError(t, c.Server.Sessions.ChangePassword(c.Ctx, a, "", temporary, consolePassword, consolePassword))
		}
		return acmeID, g.ID, temporary
	}
	// choices signs in and returns the organisations the page offers.
	choices := func(s *session, email, password string) (*goquery.Document, map[string]string) {
		doc, resp := s.loginPage(email, password)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := map[string]string{}
		doc.Find(`form.login-choice button[name=account]`).Each(func(_ int, b *goquery.Selection) {
			out[text(b)] = b.AttrOr("value", "")
		})
		return doc, out
	}
	choose := func(s *session, doc *goquery.Document, account string) *http.Response {
		token, _ := doc.Find(`form.login-choice input[name=csrf]`).Attr("value")
		return s.post("/login", url.Values{"csrf": {token}, "account": {account}})
	}

	t.Run("InvitedLikeAnyNewAddress", func(t *testing.T) {
		// The answer for an address used in globex is the answer for an
		// address nobody uses.
		manager.page("/t/acme/users/new")
		fresh, resp := manager.postPage("/t/acme/users", url.Values{"name": {"Gabi"}, "email": {"nobody-yet@example.test"}, "role": {"support"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		manager.page("/t/acme/users/new")
		used, resp := manager.postPage("/t/acme/users", url.Values{"name": {"Gabi"}, "email": {"manager@globex.test"}, "role": {"support"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		shape := func(doc *goquery.Document, email string) string {
			return strings.ReplaceAll(strings.ReplaceAll(text(doc.Find("main")), temporaryPassword(t, doc), "PASSWORD"), email, "EMAIL")
		}
		require.Equal(t, shape(fresh, "nobody-yet@example.test"), shape(used, "manager@globex.test"))
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM users WHERE email = 'manager@globex.test'`))
	})

	t.Run("EachSignsInWithTheirOwnPassword", func(t *testing.T) {
		const email = "own@example.test"
		acmeID, globexID, temporary := accounts(t, email, false)
		resp := c.from("198.51.100.70").login(email, consolePassword)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/globex/", resp.Header.Get("Location"))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1`, globexID))

		resp = c.from("198.51.100.71").login(email, temporary)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1`, acmeID))
	})

	t.Run("SamePasswordAsksWhichOrganisation", func(t *testing.T) {
		const email = "same@example.test"
		acmeID, globexID, _ := accounts(t, email, true)
		// An operator under the address with another password is not
		// offered: only the accounts the password opened are.
		_, err := c.Services.Users.Create(c.Ctx, app.CLIActor, app.UserInput{Email: email, Password: "the operator's own secret", Role: app.RoleOperator})
		require.NoError(t, err)

		s := c.from("198.51.100.72")
		doc, offered := choices(s, email, consolePassword)
		require.Equal(t, map[string]string{"Acme Tours": acmeID.String(), "Globex Travel": globexID.String()}, offered)
		require.NotContains(t, s.cookies, "herald_session", "nobody is signed in before the choice")
		resp := choose(s, doc, acmeID.String())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
		require.Contains(t, text(s.follow(resp).Find(".tenant-badge")), "Acme Tours")
		require.NotContains(t, s.cookies, "herald_login_choice", "a choice is used once")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1 AND tenant_id = $2`, acmeID, c.Tenant.ID))

		s = c.from("198.51.100.73")
		doc, _ = choices(s, email, consolePassword)
		resp = choose(s, doc, globexID.String())
		require.Equal(t, "/t/globex/", resp.Header.Get("Location"))
		require.Contains(t, text(s.follow(resp).Find(".tenant-badge")), "Globex Travel")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1 AND tenant_id = $2`, globexID, c.other.ID))

		// The operator's own password signs the operator straight in.
		resp = c.from("198.51.100.74").login(email, "the operator's own secret")
		require.Equal(t, "/tenants", resp.Header.Get("Location"))
	})

	t.Run("ChoiceOnlyAmongTheAccountsMatched", func(t *testing.T) {
		const email = "forged@example.test"
		acmeID, _, temporary := accounts(t, email, true)
		op, err := c.Services.Users.Create(c.Ctx, app.CLIActor, app.UserInput{Email: email, Password: temporary, Role: app.RoleOperator})
		require.NoError(t, err)
		s := c.from("198.51.100.75")
		doc, offered := choices(s, email, consolePassword)
		require.Len(t, offered, 2)
		// The operator account is not among the choices: naming it
		// anyway gets nowhere.
		answer, resp := s.postPage("/login", url.Values{"csrf": {doc.Find(`form.login-choice input[name=csrf]`).AttrOr("value", "")}, "account": {op.ID.String()}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, "This sign-in is no longer valid. Sign in again.", text(answer.Find(".auth-card [role=alert]")))
		require.NotContains(t, s.cookies, "herald_session")

		// Without the choice cookie nothing is chosen.
		other := c.from("198.51.100.76")
		token := other.page("/login").Find(`input[name=csrf]`).AttrOr("value", "")
		resp = other.post("/login", url.Values{"csrf": {token}, "account": {acmeID.String()}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.NotContains(t, other.cookies, "herald_session")
	})

	t.Run("ChoiceVoidedByDisabling", func(t *testing.T) {
		const email = "voided@example.test"
		acmeID, _, _ := accounts(t, email, true)
		s := c.from("198.51.100.77")
		doc, _ := choices(s, email, consolePassword)
		_, err := c.Services.Console.Users.Disable(c.Ctx, c.users[asManager], c.Tenant.ID, acmeID)
		require.NoError(t, err)
		resp := choose(s, doc, acmeID.String())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.NotContains(t, s.cookies, "herald_session")
		// With the acme account disabled the password opens one account:
		// no choice.
		resp = c.from("198.51.100.78").login(email, consolePassword)
		require.Equal(t, "/t/globex/", resp.Header.Get("Location"))
	})

	t.Run("StillConflictsInTheSameTenant", func(t *testing.T) {
		const email = "twice@example.test"
		accounts(t, email, false)
		manager.page("/t/acme/users/new")
		doc, resp := manager.postPage("/t/acme/users", url.Values{"name": {"Again"}, "email": {strings.ToUpper(email)}, "role": {"support"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, fieldError(doc, "input[name=email]"), "already exists")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM users WHERE email = $1 AND tenant_id = $2`, email, c.Tenant.ID))
	})

	t.Run("OperatorsUniqueAmongOperators", func(t *testing.T) {
		const email = "operator-too@example.test"
		accounts(t, email, false)
		// An address used only in tenants gets its operator...
		created, err := c.Services.Users.EnsureOperator(c.Ctx, app.CLIActor, email, "an operator secret")
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, 3, c.Count(`SELECT count(*) FROM users WHERE email = $1`, email))
		// ...and only one.
		created, err = c.Services.Users.EnsureOperator(c.Ctx, app.CLIActor, email, "an operator secret")
		require.NoError(t, err)
		require.False(t, created)
		_, err = c.Services.Users.Create(c.Ctx, app.CLIActor, app.UserInput{Email: email, Password: "yet another secret", Role: app.RoleOperator})
		require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
	})
}
