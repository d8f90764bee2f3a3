package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// LoginPath is where a one-time login link ([Auth.LoginLink]) leads.
const LoginPath = "/login"

// maxLoginCodes bounds the one-time codes an Auth keeps unused: the oldest
// go first.
const maxLoginCodes = 16

// Auth admits the requests that carry one of its tokens: in an
// `Authorization: Bearer` header, or in the cookie a one-time login link
// sets (HttpOnly, SameSite=Strict). Tokens are compared in constant time.
// It guards the driver's UI on Kubernetes, where any pod reaches it, and
// drover ui's local end.
type Auth struct {
	tokens [][]byte
	cookie string
	mu     sync.Mutex
	codes  []string // unused login codes, oldest first
}

// NewAuth returns an Auth that admits tokens; the first is what its cookie
// carries. It panics without a non-empty token: an Auth that admits
// nobody, or everybody, is a bug.
func NewAuth(tokens ...string) *Auth {
	a := &Auth{}
	for _, t := range tokens {
		if t == "" {
			panic("ui.NewAuth: an empty token")
		}
		a.tokens = append(a.tokens, []byte(t))
	}
	if len(a.tokens) == 0 {
		panic("ui.NewAuth: no token")
	}
	// Cookies are not kept apart by port: two UIs on one host (two drover
	// ui, a driver beside them) need names of their own. A hash of the
	// token names it without revealing it.
	sum := sha256.Sum256(a.tokens[0])
	a.cookie = "drover-ui-" + hex.EncodeToString(sum[:8])
	return a
}

// NewToken is a random token, 256 bits in URL-safe characters.
func NewToken() string { return rand.Text() + rand.Text() }

// LoginLink is a link to base (http://host:port) that admits the first
// browser that opens it: it sets the cookie and leads to the pages. Each
// link works once.
func (a *Auth) LoginLink(base string) string {
	code := rand.Text()
	a.mu.Lock()
	a.codes = append(a.codes, code)
	if len(a.codes) > maxLoginCodes {
		a.codes = slices.Delete(a.codes, 0, len(a.codes)-maxLoginCodes)
	}
	a.mu.Unlock()
	return base + LoginPath + "?" + url.Values{"code": {code}}.Encode()
}

// redeem reports whether code is an unused login code, and uses it up.
func (a *Auth) redeem(code string) bool {
	if code == "" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.codes, func(c string) bool { return subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 })
	if i < 0 {
		return false
	}
	a.codes = slices.Delete(a.codes, i, i+1)
	return true
}

// Admits reports whether r carries one of the tokens.
func (a *Auth) Admits(r *http.Request) bool {
	var given []byte
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		given = []byte(strings.TrimSpace(tok))
	} else if c, err := r.Cookie(a.cookie); err == nil {
		given = []byte(c.Value)
	} else {
		return false
	}
	ok := 0
	for _, t := range a.tokens {
		ok |= subtle.ConstantTimeCompare(t, given)
	}
	return ok == 1
}

// Wrap guards h: LoginPath redeems a login link; other requests reach h
// only when Admits, and are otherwise refused with 401 and no detail of
// the application.
func (a *Auth) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == LoginPath {
			if !a.redeem(r.URL.Query().Get("code")) {
				refuse(w, "This login link was used already, or is not this UI's: drover ui prints a new one.")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: a.cookie, Value: string(a.tokens[0]), Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode})
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if !a.Admits(r) {
			refuse(w, "This web UI answers only requests that carry the application's token: "+
				"`drover ui <namespace>:<driver pod>` opens it (see docs/ui.md).")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, http.StatusUnauthorized)
}
