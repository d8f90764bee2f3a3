package history

import (
	"bytes"
	"html"
	"net/http"
	"net/url"
	"strings"
)

// appPage serves an application's pages under /history/<appId>/, its
// newest attempt's, and an attempt's under /history/<appId>/<attemptId>/,
// as Spark's history server does. The UI links its pages from the root of
// its server, so the links in its HTML and its redirects get the prefix.
// What is not HTML (a kept log, which can be large) passes as it comes.
func (s *Server) appPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("appId")
	p := s.find(id)
	if p == nil {
		unknownApp(w, id)
		return
	}
	a, rest, chosen := p.pick(strings.TrimPrefix(r.URL.Path, "/history/"+id))
	// The ids passed CheckAppID; escaped all the same, for the path and
	// for the HTML the prefix goes into, as html/template escapes the UI's
	// own.
	prefix := "/history/" + url.PathEscape(id)
	if chosen {
		prefix += "/" + url.PathEscape(a.attempt)
		if rest == "" {
			rest = "/"
		}
	}
	inner := r.Clone(r.Context())
	inner.URL.Path = rest
	inner.URL.RawPath = ""
	pw := &prefixWriter{w: w, prefix: prefix, header: http.Header{}}
	a.ui.ServeHTTP(pw, inner)
	pw.finish()
}

// prefixWriter puts a prefix before the links of the UI's answer: its
// redirect, and the href and src attributes of its HTML, which it holds to
// rewrite. Any other answer goes to w as it is written.
type prefixWriter struct {
	w      http.ResponseWriter
	prefix string
	header http.Header
	code   int // 0 until WriteHeader
	html   bool
	body   bytes.Buffer
}

func (p *prefixWriter) Header() http.Header { return p.header }

func (p *prefixWriter) WriteHeader(code int) {
	if p.code != 0 {
		return
	}
	p.code = code
	if loc := p.header.Get("Location"); strings.HasPrefix(loc, "/") {
		p.header.Set("Location", p.prefix+loc)
	}
	p.html = strings.HasPrefix(p.header.Get("Content-Type"), "text/html")
	if p.html {
		p.header.Del("Content-Length")
		return
	}
	p.send()
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.code == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.html {
		return p.body.Write(b)
	}
	return p.w.Write(b)
}

// Flush passes a flush on when the answer goes through.
func (p *prefixWriter) Flush() {
	if p.code != 0 && !p.html {
		http.NewResponseController(p.w).Flush()
	}
}

// send writes the header.
func (p *prefixWriter) send() {
	for k, v := range p.header {
		p.w.Header()[k] = v
	}
	p.w.WriteHeader(p.code)
}

// finish ends the answer: a held HTML page with its links rewritten.
func (p *prefixWriter) finish() {
	if p.code == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if !p.html {
		return
	}
	body := p.body.Bytes()
	htmlPrefix := html.EscapeString(p.prefix)
	for _, attr := range []string{`href="/`, `src="/`} {
		body = bytes.ReplaceAll(body, []byte(attr), []byte(attr[:len(attr)-1]+htmlPrefix+"/"))
	}
	p.send()
	p.w.Write(body)
}
