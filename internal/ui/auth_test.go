package ui

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	testToken  = "tok-0123456789abcdef-0123456789"
	otherToken = "other-0123456789abcdef-01234567"
)

// TestAuthAdmits: a request reaches the guarded handler only with one of
// the tokens, as a bearer header (any case of the scheme) or the Auth's
// cookie; everything else is a 401 with a Bearer challenge.
func TestAuthAdmits(t *testing.T) {
	a := NewAuth(testToken, otherToken)
	srv := httptest.NewServer(a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) })))
	defer srv.Close()
	testCases := map[string]struct {
		header http.Header
		cookie *http.Cookie
		want   int
	}{
		"nothing":                 {want: http.StatusUnauthorized},
		"bearer":                  {header: http.Header{"Authorization": {"Bearer " + testToken}}, want: http.StatusOK},
		"bearer, lower case":      {header: http.Header{"Authorization": {"bearer " + testToken}}, want: http.StatusOK},
		"the second token":        {header: http.Header{"Authorization": {"Bearer " + otherToken}}, want: http.StatusOK},
		"a wrong token":           {header: http.Header{"Authorization": {"Bearer " + strings.ToUpper(testToken)}}, want: http.StatusUnauthorized},
		"a prefix of the token":   {header: http.Header{"Authorization": {"Bearer " + testToken[:10]}}, want: http.StatusUnauthorized},
		"an empty bearer":         {header: http.Header{"Authorization": {"Bearer "}}, want: http.StatusUnauthorized},
		"basic":                   {header: http.Header{"Authorization": {"Basic " + testToken}}, want: http.StatusUnauthorized},
		"the cookie":              {cookie: &http.Cookie{Name: a.cookie, Value: testToken}, want: http.StatusOK},
		"the cookie, wrong value": {cookie: &http.Cookie{Name: a.cookie, Value: "x" + testToken}, want: http.StatusUnauthorized},
		"another UI's cookie":     {cookie: &http.Cookie{Name: NewAuth(otherToken).cookie, Value: testToken}, want: http.StatusUnauthorized},
		"a token as a query":      {want: http.StatusUnauthorized},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/jobs/?token="+testToken, nil)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			if tc.cookie != nil {
				req.AddCookie(tc.cookie)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %s, want %d", resp.Status, tc.want)
			}
			if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != `Bearer realm="drover"` {
				t.Errorf("a refusal without a Bearer challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestLoginLink: a login link sets an HttpOnly, SameSite=Strict cookie
// that admits the browser, and works once; a made-up code admits nobody.
func TestLoginLink(t *testing.T) {
	a := NewAuth(testToken)
	srv := httptest.NewServer(a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page " + r.URL.Path)) })))
	defer srv.Close()
	link := a.LoginLink(srv.URL)
	if !strings.HasPrefix(link, srv.URL+LoginPath+"?code=") {
		t.Fatalf("LoginLink = %q", link)
	}

	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("the login link answered %s, Location %q; want a 303 to /", resp.Status, resp.Header.Get("Location"))
	}
	type cookie struct {
		Name, Value, Path string
		HttpOnly          bool
		SameSite          http.SameSite
	}
	var got []cookie
	for _, c := range resp.Cookies() {
		got = append(got, cookie{c.Name, c.Value, c.Path, c.HttpOnly, c.SameSite})
	}
	want := []cookie{{a.cookie, testToken, "/", true, http.SameSiteStrictMode}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cookies (-want,+got):\n%s", diff)
	}

	// A browser follows the link to the pages; the link is then spent.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	a2 := NewAuth(otherToken)
	srv2 := httptest.NewServer(a2.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page " + r.URL.Path)) })))
	defer srv2.Close()
	link2 := a2.LoginLink(srv2.URL)
	for i, wantStatus := range []int{http.StatusOK, http.StatusUnauthorized} {
		client := browser
		if i > 0 {
			client = &http.Client{} // another browser
		}
		resp, err := client.Get(link2)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != wantStatus {
			t.Errorf("opening the link a %d. time: %s, want %d", i+1, resp.Status, wantStatus)
		}
	}
	resp, err = browser.Get(srv2.URL + "/stages/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the browser, logged in, got %s", resp.Status)
	}
	for _, code := range []string{"", "made-up", strings.Repeat("A", 26)} {
		resp, err := http.Get(srv2.URL + LoginPath + "?code=" + code)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) > 0 {
			t.Errorf("login with code %q: %s, cookies %v; want 401 without a cookie", code, resp.Status, resp.Cookies())
		}
	}
}

// TestLoginCodesAreBounded: unused links are forgotten oldest first.
func TestLoginCodesAreBounded(t *testing.T) {
	a := NewAuth(testToken)
	first := a.LoginLink("http://ui")
	for range maxLoginCodes {
		a.LoginLink("http://ui")
	}
	if len(a.codes) != maxLoginCodes {
		t.Errorf("%d codes kept, want %d", len(a.codes), maxLoginCodes)
	}
	code := strings.TrimPrefix(first, "http://ui"+LoginPath+"?code=")
	if a.redeem(code) {
		t.Error("the oldest link still works after maxLoginCodes newer ones")
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || len(a) < 43 {
		t.Errorf("NewToken = %q, %q: want two different tokens of ≥ 256 bits", a, b)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewAuth with an empty token did not panic")
		}
	}()
	NewAuth("")
}
