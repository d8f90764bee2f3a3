package mtls

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Resumption: executors skip the certificate half of their handshake with
// the driver.
//
// Why: all executors of an application present one certificate. In a full
// TLS 1.3 handshake the driver reads and checks it, checks the signature
// the executor made with its key, and signs the handshake itself, for each
// of thousands of executors: about half of what a handshake costs the
// driver. Instead, the driver runs one handshake with the executors' bundle
// when it starts, in memory, and gives executors the session in their
// bundle (Loaded.PrepareSession); they resume it when they connect to the
// driver (Loaded.ResumingClientConfig). The certificates of that first
// handshake are the peers' certificates of every resumed connection, and
// are verified again on each (VerifyConnection runs on resumption too).
//
// What is kept: crypto/tls resumes only with a fresh key exchange
// (psk_dhe_ke, RFC 8446 §4.2.9), so every connection still runs the hybrid
// X25519MLKEM768 exchange: forward secrecy and post-quantum protection are
// those of a full handshake. There is no 0-RTT data, so nothing can be
// replayed. The driver accepts only the one session it prepared, kept in
// its memory (no ticket is decrypted from what a client sends), and issues
// no others. A session lives at most as long as crypto/tls allows (7
// days, sessionLifetime); past that, or with any server that does not hold
// the session, the handshake is a full one; the first full handshake after
// the session expired is reported (PrepareSession's expired).
//
// What the session's secret is worth: it is stored beside the executors'
// private key, in the same Secret, and lets its holder connect as an
// executor, as the key does. It also lets its holder serve the session:
// a server holding it resumes with the executors, showing them the
// driver's certificate from the session without the driver's key.
//
// So the roles a resumed connection shows (Accepting, PeerRole) prove
// this much:
//   - at the driver, the client's role, executor, holds: the session's
//     client certificate is the executors', and only a holder of their
//     Secret can resume it;
//   - at an executor, the server's role, driver, proves only that the
//     server holds the session's secret, which every executor holds too:
//     a holder of the executors' credentials that also takes over the
//     driver's address on the pod network completes the handshake with
//     executors that dial it. A full handshake (a server without the
//     session, or after its 7 days) proves the driver's key; a resumed
//     one does not, so the driver proves it on each control connection
//     besides, by signing the connection's exported keying material, and
//     executors take nothing from the stream before they checked that
//     signature (channel.go: one signature per connection, some of what
//     resumption saves the driver).
//
// Result and block fetches (gRPC) never resume: their clients offer no
// session and executors' servers hold none, so the roles they check are
// proven by the peer's key.

// pemSession is the PEM type of a bundle's session: a one-byte identity
// length, the identity, then the client's tls.SessionState.
const pemSession = "DROVER TLS SESSION"

// noTicket is the ticket a driver gives a client that asks for one: it
// resumes nothing, so such a client's next handshake is a full one.
var noTicket = []byte("drover: no ticket")

// sessionLifetime is crypto/tls's limit on a session's age: past it, the
// server makes the handshake a full one.
const sessionLifetime = 7 * 24 * time.Hour

// session is the server's side of the session a driver prepared.
type session struct {
	identity []byte
	state    *tls.SessionState
	// expires is when crypto/tls has stopped resuming the session (it
	// dates the session no later); expired, if set, is called once after
	// that, at the first full handshake (fullHandshake).
	expires time.Time
	expired func()
	once    sync.Once
}

// unwrapSession returns the prepared session if identity names it: the one
// session the server resumes.
func (m *material) unwrapSession(identity []byte, _ tls.ConnectionState) (*tls.SessionState, error) {
	s := m.prepared.Load()
	if s == nil || subtle.ConstantTimeCompare(identity, s.identity) != 1 {
		return nil, nil
	}
	return s.state, nil
}

// fullHandshake notes a client's full handshake, at now (the server's
// tls.Config.Time, or time.Now): the first once the prepared session is
// too old to resume is reported. Clients stop offering an old session
// themselves, so the server never sees it offered.
func (m *material) fullHandshake(now func() time.Time) {
	s := m.prepared.Load()
	if s == nil || s.expired == nil {
		return
	}
	if now == nil {
		now = time.Now
	}
	if !now().Before(s.expires) {
		s.once.Do(s.expired)
	}
}

// wrapSession issues noTicket: clients resume the prepared session only.
func (m *material) wrapSession(tls.ConnectionState, *tls.SessionState) ([]byte, error) {
	return noTicket, nil
}

// PrepareSession returns executors, the loaded bundle of this
// application's executors, with a session for resuming their connections
// to servers of l, which accept it from then on. It runs one handshake
// between the two, in memory. A session prepared before is replaced.
// expired, if not nil, is called once, at the first full handshake a
// server of l makes after crypto/tls stopped resuming the session (7 days
// on): from then on executors make full handshakes, which cost a server
// about twice as much.
func (l *Loaded) PrepareSession(ctx context.Context, executors *Loaded, expired func()) (*Loaded, error) {
	client := executors.m
	if client.appID != l.m.appID {
		return nil, fmt.Errorf("mtls: prepare session: the executors' bundle is for application %q, this one for %q", client.appID, l.m.appID)
	}
	identity := make([]byte, 16)
	if _, err := rand.Read(identity); err != nil {
		return nil, err
	}
	var prepared *tls.SessionState
	server := l.ServerConfig(nil)
	server.WrapSession = func(_ tls.ConnectionState, s *tls.SessionState) ([]byte, error) {
		prepared = s
		return identity, nil
	}
	cache := &capturedSession{}
	cfg := client.clientConfig("", nil, "")
	cfg.ClientSessionCache = cache

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	deadline, _ := ctx.Deadline()
	_ = sc.SetDeadline(deadline)
	_ = cc.SetDeadline(deadline)
	served := make(chan error, 1)
	go func() {
		s := tls.Server(sc, server)
		if err := s.HandshakeContext(ctx); err != nil {
			served <- err
			return
		}
		// The client reads the ticket, which follows the handshake, on its
		// first read: give it a byte to read.
		_, err := s.Write([]byte{0})
		served <- err
	}()
	c := tls.Client(cc, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("mtls: prepare session: handshake: %w", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("mtls: prepare session: reading the ticket: %w", err)
	}
	if err := <-served; err != nil {
		return nil, fmt.Errorf("mtls: prepare session: server side: %w", err)
	}
	if prepared == nil || cache.state == nil {
		return nil, errors.New("mtls: prepare session: the handshake made no session")
	}
	ticket, state, err := cache.state.ResumptionState()
	if err != nil {
		return nil, fmt.Errorf("mtls: prepare session: %w", err)
	}
	raw, err := state.Bytes()
	if err != nil {
		return nil, fmt.Errorf("mtls: prepare session: %w", err)
	}
	// crypto/tls wants UnwrapSession's states made by ParseSessionState:
	// the driver makes its one state so, once, and gives it to every
	// connection, which reads it.
	b, err := prepared.Bytes()
	if err != nil {
		return nil, fmt.Errorf("mtls: prepare session: %w", err)
	}
	if prepared, err = tls.ParseSessionState(b); err != nil {
		return nil, fmt.Errorf("mtls: prepare session: %w", err)
	}
	l.m.prepared.Store(&session{identity: ticket, state: prepared, expires: time.Now().Add(sessionLifetime), expired: expired})
	return &Loaded{m: client.withSession(cache.state,
		pem.EncodeToMemory(&pem.Block{Type: pemSession, Bytes: append(append([]byte{byte(len(ticket))}, ticket...), raw...)}))}, nil
}

// withSession is m, already parsed and checked, holding a session too.
func (m *material) withSession(s *tls.ClientSessionState, sessionPEM []byte) *material {
	return &material{appID: m.appID, ca: m.ca, roots: m.roots, cert: m.cert,
		caPEM: m.caPEM, certPEM: m.certPEM, keyPEM: m.keyPEM, session: s, sessionPEM: sessionPEM}
}

// capturedSession is a ClientSessionCache that keeps the session it is
// given, for PrepareSession.
type capturedSession struct{ state *tls.ClientSessionState }

func (c *capturedSession) Get(string) (*tls.ClientSessionState, bool) { return nil, false }
func (c *capturedSession) Put(_ string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.state = cs
	}
}

// parseSession reads a bundle's session block.
func parseSession(b []byte) (*tls.ClientSessionState, error) {
	if len(b) < 1 || len(b) < 1+int(b[0]) || b[0] == 0 {
		return nil, errors.New("mtls: decode bundle: TLS session: too short for its identity")
	}
	identity := b[1 : 1+b[0]]
	state, err := tls.ParseSessionState(b[1+b[0]:])
	if err != nil {
		return nil, fmt.Errorf("mtls: decode bundle: TLS session: %w", err)
	}
	return tls.NewResumptionState(identity, state)
}

// resumeCache offers the bundle's session to every server and keeps no
// other: the driver issues none that resume.
type resumeCache struct{ s *tls.ClientSessionState }

func (c resumeCache) Get(string) (*tls.ClientSessionState, bool) { return c.s, true }
func (c resumeCache) Put(string, *tls.ClientSessionState)        {}

// ResumingClientConfig is ClientConfig for connections to the driver: with
// a bundle made by PrepareSession, the handshake resumes the driver's
// session. A server that does not hold the session makes it a full
// handshake, after a few wasted bytes, so use ClientConfig for those.
func (l *Loaded) ResumingClientConfig(onRefuse func(remote string, err error)) *tls.Config {
	cfg := l.m.clientConfig("", onRefuse, l.peerRole)
	if l.m.session != nil {
		cfg.ClientSessionCache = resumeCache{l.m.session}
	}
	return cfg
}
