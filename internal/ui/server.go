package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// Listen binds bind:port, or when that port is taken the next ones, up to
// maxRetries of them, as Spark starts its UI; port 0 takes a free port. An
// empty bind is every interface.
func Listen(bind string, port, maxRetries int, log *slog.Logger) (net.Listener, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if port == 0 {
		maxRetries = 0
	}
	var err error
	for i := 0; i <= maxRetries; i++ {
		p := port + i
		if p > 65535 {
			break
		}
		var ln net.Listener
		ln, err = net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("web UI: listening on %s: %w", net.JoinHostPort(bind, strconv.Itoa(p)), err)
		}
		if i < maxRetries {
			log.Warn("web UI: port in use, trying the next", "port", p, "next", p+1)
		}
	}
	return nil, fmt.Errorf("web UI: ports %d to %d are all in use (spark.ui.port, spark.port.maxRetries): %w", port, port+maxRetries, err)
}

// Server serves a handler until Stop.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve serves h on ln in the background. An error of the server is
// logged: the web UI never stops the application.
func Serve(ln net.Listener, h http.Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("web UI stopped", "err", err)
		}
	}()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stop closes the server, letting requests in flight finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return err
}
