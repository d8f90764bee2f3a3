package testenv

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/testenv/procnode"
)

// startProcessNodes starts the process node agent; its pods reach the API at
// apiServer (host:port: the front when there is one).
func (e *Env) startProcessNodes(files *pkiFiles, apiServer string) error {
	cfg := rest.CopyConfig(e.Config)
	cfg.BearerToken = files.procnodeToken
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the process node client: %w", err)
	}
	for i := range e.opts.ProcessNodes {
		e.ProcessNodeNames = append(e.ProcessNodeNames, "procnode-"+strconv.Itoa(i))
	}
	logPath := filepath.Join(e.Dir, "procnode.log")
	if e.agentLog, err = os.Create(logPath); err != nil {
		return fmt.Errorf("creating the process node log: %w", err)
	}
	cidr := e.opts.PodCIDR
	if !cidr.IsValid() {
		var b [1]byte
		_, _ = rand.Read(b[:])
		cidr = netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 16 + b[0]%224, 0, 0}), 16)
	}
	ca := x509.NewCertPool()
	ca.AppendCertsFromPEM(files.caPEM)
	agent, err := procnode.New(procnode.Config{
		Client:    client,
		NodeNames: e.ProcessNodeNames,
		Dir:       filepath.Join(e.Dir, "procnode"),
		PodCIDR:   cidr,
		APIServer: apiServer,
		ClientCAs: ca,
		// Zero, the kubelet's back-off, unless a test shortens it.
		InitialBackoff: e.opts.ProcessNodeBackoff,
		MaxBackoff:     e.opts.ProcessNodeMaxBackoff,
		Logger:         slog.New(slog.NewTextHandler(e.agentLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.ProcessNode, e.agentStop, e.agentDone = agent, cancel, make(chan struct{})
	go func() {
		defer close(e.agentDone)
		if err := agent.Run(ctx); err != nil {
			fmt.Fprintf(e.agentLog, "process node agent stopped: %v\n", err)
		}
	}()
	return nil
}
