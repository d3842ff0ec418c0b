package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// Console cookies. The session is a JWT; the login cookie ties the sign-in
// form's CSRF token to the browser before anyone is signed in; the choice
// cookie names the accounts a password opened while the person chooses an
// organisation; the flash cookie carries one notice across a redirect.
const (
	cookieSession = "herald_session"
	cookieLogin   = "herald_login"
	cookieChoice  = "herald_login_choice"
	cookieFlash   = "herald_flash"
)

// choiceTTL is how long the choice of an organisation may take.
const choiceTTL = 5 * time.Minute

// choiceIssuer sets choice cookies apart from sessions: neither passes for
// the other.
const choiceIssuer = "herald-login-choice"

// choiceClaims is what the choice cookie holds: every account the password
// opened, at the session version it had then.
type choiceClaims struct {
	jwt.RegisteredClaims
	Accounts []choiceAccount `json:"accts"`
}

type choiceAccount struct {
	ID      string `json:"id"`
	Version int    `json:"sv"`
}

// setChoice sets the choice cookie for accounts.
func (s *Server) setChoice(c *fiber.Ctx, accounts []console.Account) {
	now := time.Now()
	claims := choiceClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: choiceIssuer, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(choiceTTL)),
	}}
	for _, a := range accounts {
		claims.Accounts = append(claims.Accounts, choiceAccount{ID: a.User.ID.String(), Version: a.User.SessionVersion})
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.Config.SessionKey)
	if err != nil {
		// HS256 over a byte key cannot fail.
		panic(err)
	}
	s.setCookie(c, cookieChoice, token, now.Add(choiceTTL))
}

// parseChoice returns the claims of a valid, unexpired choice cookie.
func (s *Server) parseChoice(token string) (*choiceClaims, error) {
	var claims choiceClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.Config.SessionKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(choiceIssuer), jwt.WithExpirationRequired())
	if err != nil {
		return nil, err
	}
	for _, a := range claims.Accounts {
		if _, err := uuid.Parse(a.ID); err != nil {
			return nil, errors.New("choice naming no account")
		}
	}
	return &claims, nil
}

// sessionClaims is what the session cookie holds: the user (sub), the
// user's session version when it was issued (sv), a random session id (jti)
// that the CSRF token derives from, and the time of sign-in (auth_time);
// jti and auth_time survive renewals.
type sessionClaims struct {
	jwt.RegisteredClaims
	Version  int              `json:"sv"`
	AuthTime *jwt.NumericDate `json:"auth_time,omitempty"`
}

// issueSession sets a session cookie for u: a new session when jti is empty
// and authTime zero, else the renewal of the session jti signed in at
// authTime. No session outlives console.SessionMaxAge from its sign-in.
func (s *Server) issueSession(c *fiber.Ctx, u *app.User, jti string, authTime time.Time) {
	now := time.Now()
	if jti == "" {
		jti = rand.Text()
	}
	if authTime.IsZero() {
		authTime = now
	}
	expires := now.Add(console.SessionTTL)
	if end := authTime.Add(console.SessionMaxAge); end.Before(expires) {
		expires = end
	}
	claims := sessionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    "herald",
			Subject:   u.ID.String(),
			ID:        jti,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(expires),
		},
		Version:  u.SessionVersion,
		AuthTime: jwt.NewNumericDate(authTime),
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.Config.SessionKey)
	if err != nil {
		// HS256 over a byte key cannot fail.
		panic(err)
	}
	s.setCookie(c, cookieSession, token, expires)
}

// parseSession returns the claims of a valid, unexpired session cookie
// signed in less than console.SessionMaxAge ago.
func (s *Server) parseSession(token string) (*sessionClaims, error) {
	var claims sessionClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.Config.SessionKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer("herald"), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return nil, err
	}
	if _, err := uuid.Parse(claims.Subject); err != nil || claims.ID == "" {
		return nil, errors.New("session without subject or id")
	}
	if claims.AuthTime == nil || time.Since(claims.AuthTime.Time) > console.SessionMaxAge {
		return nil, errors.New("session signed in too long ago")
	}
	return &claims, nil
}

func (s *Server) setCookie(c *fiber.Ctx, name, value string, expires time.Time) {
	c.Cookie(&fiber.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		Expires:  expires,
		HTTPOnly: true,
		Secure:   !s.Config.Dev(),
		SameSite: fiber.CookieSameSiteLaxMode,
	})
}

func (s *Server) clearCookie(c *fiber.Ctx, name string) {
	s.setCookie(c, name, "", time.Unix(1, 0))
}

// mac signs parts with the session key under a purpose, so that a value
// made for one purpose never passes for another.
func (s *Server) mac(purpose string, parts ...string) string {
	h := hmac.New(sha256.New, s.Config.SessionKey)
	h.Write([]byte(purpose))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// csrfToken is the token every form of a session carries.
func (s *Server) csrfToken(claims *sessionClaims) string {
	return s.mac("csrf", claims.ID)
}

// loginCSRF returns the sign-in form's token, setting the cookie it is tied
// to when the browser has none.
func (s *Server) loginCSRF(c *fiber.Ctx) string {
	v := c.Cookies(cookieLogin)
	if len(v) < 16 {
		v = rand.Text()
		s.setCookie(c, cookieLogin, v, time.Now().Add(24*time.Hour))
	}
	return s.mac("login", v)
}

// checkLoginCSRF checks the sign-in form's token against the cookie.
func (s *Server) checkLoginCSRF(c *fiber.Ctx) bool {
	v := c.Cookies(cookieLogin)
	return len(v) >= 16 && hmac.Equal([]byte(bodyCSRF(c)), []byte(s.mac("login", v)))
}

// bodyCSRF reads the form token from the request body only (a URL-encoded
// or multipart form), never from the query string: a token in a URL ends
// up in logs, browser history and Referer headers, where others read it.
func bodyCSRF(c *fiber.Ctx) string {
	if v := c.Request().PostArgs().Peek("csrf"); len(v) > 0 {
		return string(v)
	}
	if form, err := c.MultipartForm(); err == nil {
		if v := form.Value["csrf"]; len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// flash stores a notice for the next page the browser loads.
func (s *Server) flash(c *fiber.Ctx, kind, message string) {
	b, _ := json.Marshal(views.Flash{Kind: kind, Message: message})
	v := base64.RawURLEncoding.EncodeToString(b)
	s.setCookie(c, cookieFlash, v+"."+s.mac("flash", v), time.Now().Add(5*time.Minute))
}

// takeFlash returns and clears the stored notice, if any.
func (s *Server) takeFlash(c *fiber.Ctx) []views.Flash {
	raw := c.Cookies(cookieFlash)
	if raw == "" {
		return nil
	}
	s.clearCookie(c, cookieFlash)
	v, sig, ok := strings.Cut(raw, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac("flash", v))) {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	var f views.Flash
	if err != nil || json.Unmarshal(b, &f) != nil || f.Message == "" {
		return nil
	}
	return []views.Flash{f}
}
