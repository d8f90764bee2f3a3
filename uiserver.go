package drover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/metrics"
)

// uiPortRetries is how many ports after spark.ui.port are tried when it is
// taken: spark.port.maxRetries' default.
const uiPortRetries = 16

// uiServer serves the driver's HTTP endpoints on spark.ui.port: for now
// the Prometheus metrics; the web UI's pages mount beside them.
type uiServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// startUIServer listens on spark.ui.port, or the first free port of the
// next uiPortRetries, on every interface unless SPARK_LOCAL_IP names one,
// as Spark's UI. It never fails the application: without a port it logs
// why and returns nil.
func startUIServer(conf *config.Conf, reg *metrics.Registry, log *slog.Logger) *uiServer {
	ln, err := listenUI(os.Getenv("SPARK_LOCAL_IP"), config.UIPort.Get(conf))
	if err != nil {
		log.Warn("the web UI and metrics are not served; the application goes on without them", "err", err)
		return nil
	}
	mux := http.NewServeMux()
	h := metrics.Handler(reg)
	mux.Handle(metrics.Path, h)
	mux.Handle(metrics.SparkExecutorsPath, h)
	s := &uiServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the web UI stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+s.hostPort()+metrics.Path)
	return s
}

func listenUI(host string, port int) (net.Listener, error) {
	var err error
	for i := 0; i <= uiPortRetries; i++ {
		p := port + i
		if port == 0 {
			p = 0
		}
		if p > 65535 {
			break
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p))); err == nil {
			return ln, nil
		}
		if port == 0 {
			break
		}
	}
	return nil, fmt.Errorf("spark.ui.port %d and the %d ports after it: %w", port, uiPortRetries, err)
}

// hostPort is where a browser on this machine reaches the server.
func (s *uiServer) hostPort() string {
	a, ok := s.addr.(*net.TCPAddr)
	if !ok || a.IP.IsUnspecified() {
		_, port, _ := net.SplitHostPort(s.addr.String())
		return net.JoinHostPort("localhost", port)
	}
	return a.String()
}

// stop closes the server after the requests in flight, within a few
// seconds.
func (s *uiServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
