package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// Failover is an http.RoundTripper over an ordered list of API server
// endpoints of one control plane (issue 40, item 2). Every request goes to
// the current endpoint: the first healthy one in list order. The endpoints
// share the CA and the credentials, so one wrapped transport serves them
// all; Failover only rewrites the scheme and host of each request's URL.
//
// An endpoint that fails (see decide) is marked unhealthy and traffic moves
// at once to the next healthy endpoint: nothing sleeps on the request path.
// A request is resent there only when that cannot store it twice. A
// background loop probes the unhealthy endpoints with GET /readyz every
// ProbeInterval and takes one back when it answers 200; as the current
// endpoint is the first healthy one, traffic returns to the primary.
//
// Watches are ordinary GETs here: when one breaks, client-go's reflector
// asks again from its last resource version, and that request goes to the
// healthy endpoint (one etcd, one version history).
type Failover struct {
	next          http.RoundTripper
	endpoints     []*url.URL
	names         []string
	probeInterval time.Duration
	probeTimeout  time.Duration
	onSwitch      func(from, to string, err error)

	// switchMu orders the hook's calls, which run outside mu so that a
	// hook may call Current.
	switchMu sync.Mutex
	mu       sync.Mutex
	healthy  []bool
	current  int
	// failures counts each endpoint's failures: a request that started
	// before the last one says nothing of the endpoint's health since.
	failures []uint64

	ticker clock.Ticker
	cancel context.CancelFunc
	done   chan struct{}
	close  sync.Once
}

// FailoverOptions configures NewFailover.
type FailoverOptions struct {
	// Endpoints are the API servers' URLs in order of preference
	// (https://host:port; http only where the caller allows it). The
	// first is the primary.
	Endpoints []string
	// Transport is the wrapped transport, shared by every endpoint: TLS
	// and credentials are the same for all. Its dial and TLS handshake
	// timeouts bound how long a silent endpoint holds a request before
	// it moves on. Nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Clock drives the probe loop (k8s.io/utils/clock, so tests step
	// it); nil is the real clock.
	Clock clock.WithTicker
	// ProbeInterval is how often unhealthy endpoints are probed with GET
	// /readyz; zero is DefaultProbeInterval.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe; zero is the probe interval.
	ProbeTimeout time.Duration
	// OnSwitch, when set, is called exactly once each time the current
	// endpoint changes: err is the failure that made the transport leave
	// from, nil when the probe took to back. Calls are serialised, in the
	// order of the switches; the hook may call Current.
	OnSwitch func(from, to string, err error)
}

// DefaultProbeInterval is how often an unhealthy endpoint is probed.
const DefaultProbeInterval = time.Second

// NewFailover validates the endpoints and starts the probe loop; Close
// stops it.
func NewFailover(o FailoverOptions) (*Failover, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("failover: no API server endpoints")
	}
	f := &Failover{
		next:          o.Transport,
		probeInterval: o.ProbeInterval,
		probeTimeout:  o.ProbeTimeout,
		onSwitch:      o.OnSwitch,
		healthy:       make([]bool, len(o.Endpoints)),
		failures:      make([]uint64, len(o.Endpoints)),
		done:          make(chan struct{}),
	}
	if f.next == nil {
		f.next = http.DefaultTransport
	}
	if f.probeInterval <= 0 {
		f.probeInterval = DefaultProbeInterval
	}
	if f.probeTimeout <= 0 {
		f.probeTimeout = f.probeInterval
	}
	seen := map[string]bool{}
	for i, s := range o.Endpoints {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("failover: API server endpoint %q: %w", s, err)
		}
		// Only scheme and host are rewritten: a path, query or user would
		// be lost or differ from what client-go built the request for.
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return nil, fmt.Errorf("failover: API server endpoint %q: want scheme://host[:port]", s)
		}
		name := u.Scheme + "://" + u.Host
		if seen[name] {
			return nil, fmt.Errorf("failover: API server endpoint %q listed twice", s)
		}
		seen[name] = true
		f.endpoints = append(f.endpoints, &url.URL{Scheme: u.Scheme, Host: u.Host})
		f.names = append(f.names, name)
		f.healthy[i] = true
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// The ticker exists before NewFailover returns, so a test's first
	// Step of a fake clock reaches it.
	f.ticker = clk.NewTicker(f.probeInterval)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go f.probeLoop(ctx)
	return f, nil
}

// Current is the endpoint requests go to now.
func (f *Failover) Current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.names[f.current]
}

// Close stops the probe loop and waits for it. It does not close the
// shared transport's connections.
func (f *Failover) Close() error {
	f.close.Do(func() {
		f.cancel()
		<-f.done
		f.ticker.Stop()
	})
	return nil
}

// CloseIdleConnections passes on to the wrapped transport, as http.Client
// and client-go's utilities expect of a wrapper.
func (f *Failover) CloseIdleConnections() {
	if c, ok := f.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// WrappedRoundTripper lets client-go's utilnet see the wrapped transport.
func (f *Failover) WrappedRoundTripper() http.RoundTripper { return f.next }

// RoundTrip sends req to the current endpoint and, when decide allows,
// resends it to each further healthy endpoint in list order, each at most
// once.
func (f *Failover) RoundTrip(req *http.Request) (*http.Response, error) {
	tried := make([]bool, len(f.endpoints))
	i := f.pick(tried)
	for attempt := 0; ; attempt++ {
		tried[i] = true
		before := f.failureCount(i)
		resp, o := f.send(req, i, attempt)
		if req.Context().Err() != nil {
			// The caller gave up: that says nothing about the endpoint.
			return resp, o.Err
		}
		v := decide(o)
		if v == deliver {
			// An answer to a request sent before the endpoint last
			// failed does not bring it back: a server shutting down
			// finishes what it had; /readyz decides.
			if f.failureCount(i) == before {
				f.setHealthy(i)
			}
			return resp, o.Err
		}
		cause := o.Err
		if cause == nil {
			cause = fmt.Errorf("%s answered %s", f.names[i], resp.Status)
		}
		f.setUnhealthy(i, cause)
		if v == failDeliver {
			return resp, o.Err
		}
		next := f.pick(tried)
		if tried[next] {
			return resp, o.Err // every endpoint was tried
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
		i = next
	}
}

// send makes one attempt on endpoint i; attempt > 0 replays the body.
func (f *Failover) send(req *http.Request, i, attempt int) (*http.Response, outcome) {
	o := outcome{
		Method:     req.Method,
		Replayable: req.Body == nil || req.Body == http.NoBody || req.GetBody != nil,
	}
	// GotConn fires once a connection (TCP and TLS) is ready for the
	// request; without it the request was certainly not written.
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		mu.Lock()
		o.Connected = true
		mu.Unlock()
	}}
	r := req.Clone(httptrace.WithClientTrace(req.Context(), trace))
	r.URL.Scheme, r.URL.Host = f.endpoints[i].Scheme, f.endpoints[i].Host
	r.Host = ""
	if attempt > 0 && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			o.Err = err
			return nil, o
		}
		r.Body = body
	}
	resp, err := f.next.RoundTrip(r)
	mu.Lock()
	defer mu.Unlock()
	o.Err = err
	if resp != nil {
		o.Status = resp.StatusCode
		o.RetryAfter = resp.Header.Get("Retry-After") != ""
	}
	return resp, o
}

// pick is the first healthy endpoint not yet tried, in list order; when
// there is none, the current endpoint, tried or not.
func (f *Failover) pick(tried []bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ok := range f.healthy {
		if ok && !tried[i] {
			return i
		}
	}
	return f.current
}

// setUnhealthy marks endpoint i failed and moves the current endpoint to
// the first healthy one. With none healthy the current endpoint stays:
// requests still go somewhere, and the probe brings one back.
func (f *Failover) setUnhealthy(i int, cause error) {
	f.update(i, false, cause)
}

// setHealthy marks endpoint i healthy and makes it current if it comes
// first.
func (f *Failover) setHealthy(i int) {
	f.mu.Lock()
	ok := f.healthy[i]
	f.mu.Unlock()
	if !ok {
		f.update(i, true, nil)
	}
}

func (f *Failover) failureCount(i int) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures[i]
}

func (f *Failover) update(i int, healthy bool, cause error) {
	f.switchMu.Lock()
	defer f.switchMu.Unlock()
	f.mu.Lock()
	f.healthy[i] = healthy
	if !healthy {
		f.failures[i]++
	}
	from := f.current
	for j, ok := range f.healthy {
		if ok {
			f.current = j
			break
		}
	}
	to := f.current
	f.mu.Unlock()
	if from != to && f.onSwitch != nil {
		f.onSwitch(f.names[from], f.names[to], cause)
	}
}

func (f *Failover) probeLoop(ctx context.Context) {
	defer close(f.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.ticker.C():
		}
		f.mu.Lock()
		var down []int
		for i, ok := range f.healthy {
			if !ok {
				down = append(down, i)
			}
		}
		f.mu.Unlock()
		for _, i := range down {
			if f.probe(ctx, i) {
				f.setHealthy(i)
			}
		}
	}
}

// probe reports whether endpoint i answers GET /readyz with 200.
func (f *Failover) probe(ctx context.Context, i int) bool {
	ctx, cancel := context.WithTimeout(ctx, f.probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.names[i]+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK
}

// outcome is what one attempt on one endpoint came to: decide's input.
type outcome struct {
	Method string
	// Replayable: no body, or GetBody gives it again.
	Replayable bool
	// Connected: the transport got a connection for the request (TCP and
	// TLS done), so it may have been written.
	Connected bool
	Err       error
	// Status and RetryAfter describe the response when Err is nil.
	Status     int
	RetryAfter bool
}

// verdict is what becomes of an attempt.
type verdict int

const (
	// deliver: the endpoint works; the response or error goes to the
	// caller as it is (4xx, 429 with Retry-After: client-go handles them).
	deliver verdict = iota
	// failDeliver: the endpoint failed and traffic moves on, but the
	// request may have reached a server that stored it, so it goes back
	// to the caller, whose rules for an unknown outcome apply.
	failDeliver
	// failRetry: the endpoint failed and the request is resent to the
	// next healthy endpoint.
	failRetry
)

func (v verdict) String() string {
	switch v {
	case deliver:
		return "deliver"
	case failDeliver:
		return "failDeliver"
	case failRetry:
		return "failRetry"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// decide says whether the endpoint failed and whether the request may
// move to the next endpoint. An endpoint fails on a connection refused,
// reset or timeout, a 5xx, or a 429 without Retry-After. Idempotent
// requests (GET, HEAD: lists and watches) are resent after any of these;
// others only when the connection was never established, since otherwise
// a server may have stored them, and resending would create twice.
func decide(o outcome) verdict {
	var failed, sent bool
	switch {
	case o.Err != nil && !o.Connected && connectError(o.Err):
		failed, sent = true, false
	case o.Err != nil:
		failed, sent = endpointError(o.Err), true
	case o.Status >= 500, o.Status == http.StatusTooManyRequests && !o.RetryAfter:
		failed, sent = true, true
	}
	switch {
	case !failed:
		return deliver
	case !o.Replayable:
		return failDeliver
	case !sent || o.Method == http.MethodGet || o.Method == http.MethodHead:
		return failRetry
	}
	return failDeliver
}

// connectError reports an error of setting up the connection: dialing
// (refused, unreachable, timeout, DNS) or the TLS handshake.
func connectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var (
		cv *tls.CertificateVerificationError
		ae tls.AlertError
		rh tls.RecordHeaderError
	)
	if errors.As(err, &cv) || errors.As(err, &ae) || errors.As(err, &rh) {
		return true
	}
	// net/http's TLS handshake timeout is an unexported net.Error; other
	// timeouts (waiting for headers) may come after the request was
	// written.
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && strings.Contains(err.Error(), "TLS handshake timeout")
}

// endpointError reports an error that says the endpoint or the path to it
// broke (reset, closed, timed out), as opposed to one of the request.
func endpointError(err error) bool {
	if connectError(err) {
		return true
	}
	var (
		op *net.OpError
		ne net.Error
	)
	return errors.As(err, &op) || errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
