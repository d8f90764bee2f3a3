package client

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
)

// TestAPIServerFailoverDecide is decide's table: which outcomes fail the
// endpoint, and which requests may be resent to the next one.
func TestAPIServerFailoverDecide(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	tlsFail := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	handshakeTimeout := fmt.Errorf("wrapped: %w", namedTimeout("net/http: TLS handshake timeout"))
	headerTimeout := namedTimeout("net/http: timeout awaiting response headers")
	other := errors.New("net/http: invalid header field name")
	type row struct {
		name string
		o    outcome
	}
	rows := []row{}
	add := func(name string, o outcome) {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			o := o
			o.Method = m
			o.Replayable = true
			rows = append(rows, row{m + " " + name, o})
		}
	}
	add("200", outcome{Connected: true, Status: 200})
	add("404", outcome{Connected: true, Status: 404})
	add("409", outcome{Connected: true, Status: 409})
	add("429 Retry-After", outcome{Connected: true, Status: 429, RetryAfter: true})
	add("429", outcome{Connected: true, Status: 429})
	add("500", outcome{Connected: true, Status: 500})
	add("503 Retry-After", outcome{Connected: true, Status: 503, RetryAfter: true})
	add("refused", outcome{Err: refused})
	add("dial timeout", outcome{Err: dialTimeout})
	add("tls verify", outcome{Err: tlsFail})
	add("tls handshake timeout", outcome{Err: handshakeTimeout})
	add("reset", outcome{Connected: true, Err: reset})
	add("EOF", outcome{Connected: true, Err: io.ErrUnexpectedEOF})
	add("header timeout", outcome{Connected: true, Err: headerTimeout})
	add("header timeout, no trace", outcome{Err: headerTimeout})
	add("dial error after GotConn", outcome{Connected: true, Err: refused})
	add("other error", outcome{Connected: true, Err: other})
	rows = append(rows,
		row{"POST refused, body not replayable", outcome{Method: "POST", Err: refused}},
		row{"GET 503, body not replayable", outcome{Method: "GET", Connected: true, Status: 503}},
	)
	got := map[string]string{}
	for _, r := range rows {
		got[r.name] = decide(r.o).String()
	}
	want := map[string]string{}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		idem := m == "GET" || m == "HEAD"
		sentFail := map[bool]string{true: "failRetry", false: "failDeliver"}[idem]
		for name, v := range map[string]string{
			"200": "deliver", "404": "deliver", "409": "deliver", "429 Retry-After": "deliver",
			"other error": "deliver",
			"429":         sentFail, "500": sentFail, "503 Retry-After": sentFail,
			"reset": sentFail, "EOF": sentFail, "header timeout": sentFail,
			"header timeout, no trace": sentFail, "dial error after GotConn": sentFail,
			"refused": "failRetry", "dial timeout": "failRetry", "tls verify": "failRetry",
			"tls handshake timeout": "failRetry",
		} {
			want[m+" "+name] = v
		}
	}
	want["POST refused, body not replayable"] = "failDeliver"
	want["GET 503, body not replayable"] = "failDeliver"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decide (-want +got):\n%s", diff)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

type namedTimeout string

func (e namedTimeout) Error() string { return string(e) }
func (namedTimeout) Timeout() bool   { return true }
func (namedTimeout) Temporary() bool { return true }

// apiServer is a stand-in API server over TLS that counts its requests.
type apiServer struct {
	*httptest.Server
	hits    atomic.Int32 // requests other than /readyz
	readyz  atomic.Int32
	mu      sync.Mutex
	bodies  []string
	handler atomic.Pointer[http.HandlerFunc]
}

func newAPIServer(t *testing.T, h http.HandlerFunc) *apiServer {
	t.Helper()
	s := &apiServer{}
	s.set(h)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			s.readyz.Add(1)
		} else {
			s.hits.Add(1)
			b, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.bodies = append(s.bodies, r.Method+" "+string(b))
			s.mu.Unlock()
		}
		(*s.handler.Load())(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *apiServer) set(h http.HandlerFunc) { s.handler.Store(&h) }

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func status(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

// resetAfterRead reads the whole request, then resets the connection: the
// request reached the server, no answer came back.
func resetAfterRead(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*tls.Conn); ok {
		if nc, ok := tc.NetConn().(*net.TCPConn); ok {
			_ = nc.SetLinger(0)
		}
	}
	conn.Close()
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}

type switchEvent struct {
	From, To string
	Err      bool
}

// harness builds a Failover over endpoints with a transport that trusts
// httptest's certificate, and records the switches.
type harness struct {
	*Failover
	tr    *http.Transport
	clock *testingclock.FakeClock
	mu    sync.Mutex
	log   []switchEvent
}

func newHarness(t *testing.T, endpoints ...string) *harness {
	t.Helper()
	// Every httptest TLS server has the same certificate.
	srv := httptest.NewTLSServer(nil)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	srv.Close()
	h := &harness{
		tr:    &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		clock: testingclock.NewFakeClock(time.Now()),
	}
	f, err := NewFailover(FailoverOptions{
		Endpoints:     endpoints,
		Transport:     h.tr,
		Clock:         h.clock,
		ProbeInterval: time.Second,
		OnSwitch: func(from, to string, err error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.log = append(h.log, switchEvent{from, to, err != nil})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Failover = f
	t.Cleanup(func() {
		f.Close()
		h.tr.CloseIdleConnections()
	})
	return h
}

func (h *harness) switches() []switchEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]switchEvent(nil), h.log...)
}

func (h *harness) do(t *testing.T, method, body string) (*http.Response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	// The URL's host is the primary's, as client-go builds it; Failover
	// rewrites it.
	req, err := http.NewRequestWithContext(t.Context(), method, h.names[0]+"/api/v1/namespaces/ns/pods", rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func leakCheck(t *testing.T) {
	t.Helper()
	opts := []goleak.Option{goleak.IgnoreCurrent()}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// TestAPIServerFailoverRefused: a refused primary sends GETs and POSTs to
// the next endpoint, switching once.
func TestAPIServerFailoverRefused(t *testing.T) {
	leakCheck(t)
	b := newAPIServer(t, ok)
	dead := closedPort(t)
	h := newHarness(t, dead, b.URL)
	for _, m := range []string{"GET", "POST", "GET"} {
		body := ""
		if m == "POST" {
			body = `{"kind":"Pod"}`
		}
		resp, err := h.do(t, m, body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", m, resp, err)
		}
	}
	if got := h.Current(); got != b.URL {
		t.Errorf("Current() = %s, want %s", got, b.URL)
	}
	want := []switchEvent{{dead, b.URL, true}}
	if diff := cmp.Diff(want, h.switches()); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	wantBodies := []string{"GET ", `POST {"kind":"Pod"}`, "GET "}
	if diff := cmp.Diff(wantBodies, b.requests()); diff != "" {
		t.Errorf("requests at the second endpoint (-want +got):\n%s", diff)
	}
}

// TestAPIServerFailoverStatus: 503 and 429 without Retry-After move GETs on
// and fail POSTs back to the caller; 429 with Retry-After and 4xx come back
// as they are and change nothing.
func TestAPIServerFailoverStatus(t *testing.T) {
	leakCheck(t)
	for _, tc := range []struct {
		name        string
		h           http.HandlerFunc
		method      string
		wantStatus  int
		wantSwitch  bool
		wantSecondB int32
	}{
		{"GET 503", status(503, ""), "GET", 200, true, 1},
		{"GET 429", status(429, ""), "GET", 200, true, 1},
		{"GET 429 Retry-After", status(429, "1"), "GET", 429, false, 0},
		{"GET 404", status(404, ""), "GET", 404, false, 0},
		{"POST 503", status(503, ""), "POST", 503, true, 0},
		{"POST 429", status(429, ""), "POST", 429, true, 0},
		{"POST 429 Retry-After", status(429, "1"), "POST", 429, false, 0},
		{"POST 409", status(409, ""), "POST", 409, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newAPIServer(t, tc.h), newAPIServer(t, ok)
			h := newHarness(t, a.URL, b.URL)
			body := ""
			if tc.method == "POST" {
				body = "{}"
			}
			resp, err := h.do(t, tc.method, body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := b.hits.Load(); got != tc.wantSecondB {
				t.Errorf("second endpoint got %d requests, want %d", got, tc.wantSecondB)
			}
			var want []switchEvent
			wantCurrent := a.URL
			if tc.wantSwitch {
				want, wantCurrent = []switchEvent{{a.URL, b.URL, true}}, b.URL
			}
			if diff := cmp.Diff(want, h.switches()); diff != "" {
				t.Errorf("switches (-want +got):\n%s", diff)
			}
			if got := h.Current(); got != wantCurrent {
				t.Errorf("Current() = %s, want %s", got, wantCurrent)
			}
		})
	}
}

// TestAPIServerFailoverReset: a connection reset after the request was
// written resends a GET but returns a POST's error to the caller, which
// must treat the create as of unknown outcome; traffic moves on either way.
func TestAPIServerFailoverReset(t *testing.T) {
	leakCheck(t)
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			a, b := newAPIServer(t, resetAfterRead), newAPIServer(t, ok)
			h := newHarness(t, a.URL, b.URL)
			resp, err := h.do(t, method, map[string]string{"POST": "{}"}[method])
			if method == "GET" {
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET: %v %v", resp, err)
				}
			} else if err == nil {
				t.Fatalf("POST on a reset connection succeeded: %v", resp.Status)
			}
			wantB := map[string]int32{"GET": 1, "POST": 0}[method]
			if got := b.hits.Load(); got != wantB {
				t.Errorf("second endpoint got %d requests, want %d", got, wantB)
			}
			if got := a.hits.Load(); got != 1 {
				t.Errorf("first endpoint got %d requests, want 1", got)
			}
			if got := h.Current(); got != b.URL {
				t.Errorf("Current() = %s, want %s", got, b.URL)
			}
		})
	}
}

// TestAPIServerFailoverUnreplayable: a POST whose body cannot be read again
// is not resent, even to a refused endpoint's successor.
func TestAPIServerFailoverUnreplayable(t *testing.T) {
	leakCheck(t)
	b := newAPIServer(t, ok)
	h := newHarness(t, closedPort(t), b.URL)
	req, err := http.NewRequestWithContext(t.Context(), "POST", h.names[0]+"/api", io.NopCloser(bytes.NewReader([]byte("{}"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.RoundTrip(req); err == nil {
		t.Fatal("a POST with a one-shot body to a refused endpoint succeeded")
	}
	if got := b.hits.Load(); got != 0 {
		t.Errorf("second endpoint got %d requests, want 0", got)
	}
	if got := h.Current(); got != b.URL {
		t.Errorf("Current() = %s, want %s", got, b.URL)
	}
}

// TestAPIServerFailoverProbe: the probe takes the primary back once its
// /readyz answers 200, not before, and traffic returns to it.
func TestAPIServerFailoverProbe(t *testing.T) {
	leakCheck(t)
	a, b, c := newAPIServer(t, status(503, "")), newAPIServer(t, ok), newAPIServer(t, ok)
	h := newHarness(t, a.URL, b.URL, c.URL)
	if resp, err := h.do(t, "GET", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", resp, err)
	}
	if got := h.Current(); got != b.URL {
		t.Fatalf("Current() = %s, want %s", got, b.URL)
	}
	// Still down: a probe runs and changes nothing.
	h.clock.Step(time.Second)
	waitFor(t, "a probe of the first endpoint", func() bool { return a.readyz.Load() >= 1 })
	h.clock.Step(time.Second) // the loop is back at the ticker once this probe starts
	waitFor(t, "a second probe", func() bool { return a.readyz.Load() >= 2 })
	if got := h.Current(); got != b.URL {
		t.Fatalf("Current() = %s after a failed probe, want %s", got, b.URL)
	}
	a.set(ok)
	h.clock.Step(time.Second)
	waitFor(t, "the first endpoint taken back", func() bool { return h.Current() == a.URL })
	if resp, err := h.do(t, "GET", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", resp, err)
	}
	if got := a.hits.Load(); got != 2 {
		t.Errorf("first endpoint got %d requests, want 2", got)
	}
	want := []switchEvent{{a.URL, b.URL, true}, {b.URL, a.URL, false}}
	if diff := cmp.Diff(want, h.switches()); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	if got := c.hits.Load() + c.readyz.Load() + b.readyz.Load(); got != 0 {
		t.Errorf("healthy endpoints were probed or the third used: %d requests", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAPIServerFailoverOptions: bad endpoint lists are refused; Close stops
// the probe loop and may be called twice.
func TestAPIServerFailoverOptions(t *testing.T) {
	leakCheck(t)
	for _, eps := range [][]string{
		nil,
		{"ftp://a:1"},
		{"https://a:1/prefix"},
		{"https://a:1", "https://a:1/"},
		{"https://user@a:1"},
		{"://"},
	} {
		if f, err := NewFailover(FailoverOptions{Endpoints: eps}); err == nil {
			f.Close()
			t.Errorf("NewFailover(%q) succeeded", eps)
		}
	}
	f, err := NewFailover(FailoverOptions{Endpoints: []string{"https://a:1/", "https://b:2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Current(); got != "https://a:1" {
		t.Errorf("Current() = %s", got)
	}
	f.Close()
	f.Close()
}

// TestAPIServerFailoverClientset: a clientset over HTTP/2 whose client
// transport (credentials included) is wrapped in a Failover, as client.New
// will do it, lists pods from the second endpoint when the first is closed.
func TestAPIServerFailoverClientset(t *testing.T) {
	leakCheck(t)
	var auth atomic.Value
	b := newAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization") + " " + r.Proto)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
	})
	b.Close() // restart with HTTP/2, as kube-apiserver speaks it
	b.Server = httptest.NewUnstartedServer(b.Config.Handler)
	b.EnableHTTP2 = true
	b.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.StartTLS()
	t.Cleanup(b.Close)
	dead := closedPort(t)
	cfg := &rest.Config{
		Host:            dead,
		BearerToken:     "secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Certificate().Raw})},
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFailover(FailoverOptions{Endpoints: []string{dead, b.URL}, Transport: hc.Transport})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer f.CloseIdleConnections()
	cs, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: f})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := cs.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("listing took %v past a closed endpoint", d)
	}
	if got, want := auth.Load(), "Bearer secret HTTP/2.0"; got != want {
		t.Errorf("second endpoint saw %q, want %q", got, want)
	}
	if got := f.Current(); got != b.URL {
		t.Errorf("Current() = %s, want %s", got, b.URL)
	}
}

// TestAPIServerFailoverLateAnswer: an answer to a request sent before the
// endpoint failed (a server shutting down finishes what it had) does not
// bring the endpoint back; only its /readyz does.
func TestAPIServerFailoverLateAnswer(t *testing.T) {
	leakCheck(t)
	release := make(chan struct{})
	a := newAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			<-release
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	b := newAPIServer(t, ok)
	h := newHarness(t, a.URL, b.URL)
	slow := make(chan error, 1)
	go func() {
		resp, err := h.do(t, "GET", "")
		if err == nil {
			resp.Body.Close()
		}
		slow <- err
	}()
	for a.hits.Load() == 0 { // the GET reached a
		runtime.Gosched()
	}
	if resp, err := h.do(t, "POST", `{"kind":"Pod"}`); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if got := h.Current(); got != b.URL {
		t.Errorf("Current() = %s after a late answer from the failed endpoint, want %s", got, b.URL)
	}
	if diff := cmp.Diff([]switchEvent{{a.URL, b.URL, true}}, h.switches()); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
}
