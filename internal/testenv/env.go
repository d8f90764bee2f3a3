package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// Options says which components to run besides etcd and kube-apiserver.
type Options struct {
	// Scheduler runs kube-scheduler; without it pods need spec.nodeName.
	Scheduler bool
	// ControllerManager runs kube-controller-manager: garbage collection of
	// owned objects, namespace deletion, service accounts and their tokens,
	// node lifecycle, workload controllers.
	ControllerManager bool
	// KwokNodes simulated nodes, managed by kwok. They carry KwokTaint, so
	// only pods with KwokToleration land on them.
	KwokNodes int
	// KwokStages is the kwok pod behaviour: "fast" (default: Running at once)
	// or "general" (start-up latency and jitter like real nodes).
	KwokStages string
	// ProcessNodes nodes run their pods as local processes (package procnode).
	ProcessNodes int
	// StartTimeout bounds Start; default 90s (a busy 2-core machine needs
	// well over the 20s envtest assumes).
	StartTimeout time.Duration
	// Dir is where the environment's directory is created; default
	// os.TempDir().
	Dir string
	// PodCIDR is the process nodes' loopback pod range; default a random
	// 127.X.0.0/16, so environments on one machine rarely share addresses.
	PodCIDR netip.Prefix
	// ProcessNodeBackoff and ProcessNodeMaxBackoff shorten the process
	// nodes' crash-loop back-off between container restarts, for tests only;
	// zero keeps the kubelet's 10s and 300s (see procnode.Config).
	ProcessNodeBackoff, ProcessNodeMaxBackoff time.Duration
	// Logf receives progress messages during Start; default none.
	Logf func(format string, args ...any)
	// Kueue runs Kueue's controller manager (built by hack/build-kueue.sh)
	// with its CRDs and webhooks, managing the pods of namespaces made with
	// NewKueueNamespace; Env.Kueue reaches its objects.
	Kueue bool
	// AuditPodCreates makes the API server write an audit line for every
	// pod create request it receives (see [Env.PodCreates]): the count of
	// POSTs a driver sent, told by the server, not the client.
	AuditPodCreates bool
	// APIServers is how many kube-apiservers run over the one etcd; default
	// 1. Each listens on its own 127.0.0.1 port (Env.URLs) with the same
	// serving certificate, client CA, tokens, service-account keys and audit
	// policy; Kill and Restart take each by its APIServerName. With more
	// than one, Env.URL is a loopback front that forwards each connection to
	// the first live server, as a load balancer would, and every component
	// (scheduler, controller manager, kwok, process nodes and their pods,
	// Kueue) reaches the API through it: the cluster keeps working while
	// any one server lives.
	APIServers int
	// RealNode runs a real node as well (StartRealNode: containerd, runc
	// and a kubelet), named RealNodeName, with RealNodeImages imported,
	// once the rest is ready; Env.RealNode is it. The kubernetes
	// Service's address (10.0.0.1:443) forwards to the API servers, as
	// kube-proxy would, for drivers in its pods. It needs the run's
	// network namespace (hack/realnode-netns.sh) and root.
	RealNode       bool
	RealNodeImages []string
}

// Env is a running control plane. Stop it with Stop.
type Env struct {
	// Config is an admin (system:masters) client configuration for URL,
	// without client-side rate limits.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same credentials
	// and URL.
	Kubeconfig string
	// Client is a clientset built from Config.
	Client kubernetes.Interface
	// Dir holds every file of the environment: data, certificates, component
	// logs (<component>.log), process node pod logs. Stop removes it.
	Dir string
	// URL is where clients and components reach the API,
	// https://127.0.0.1:<port>: the API server when there is one
	// (URLs[0]); with Options.APIServers > 1 the front (front.go), which
	// forwards each connection to the first API server that is up.
	URL string
	// URLs of each API server, server i at i: never the front.
	URLs []string
	// Kubeconfigs has a kubeconfig file per API server, server i at i, with
	// Kubeconfig's credentials: Kubeconfigs[0] is Kubeconfig only when there
	// is one server (no front).
	Kubeconfigs []string
	// EtcdURL and EtcdPeerURL are etcd's client and peer listeners
	// (https://127.0.0.1:<port>). Both require a client certificate from
	// etcd's own authority, which only the API server holds: a local user
	// who reaches etcd must not become cluster admin.
	EtcdURL, EtcdPeerURL string
	// BinDir holds the binaries, kubectl included.
	BinDir string
	// ProcessNode runs the process nodes' pods; nil when Options.ProcessNodes
	// is 0. Its Logs method returns a pod's output.
	ProcessNode *procnode.Agent
	// Kueue is the queue controller; nil unless Options.Kueue.
	Kueue *Kueue
	// RealNode is the real node; nil unless Options.RealNode.
	RealNode *RealNode
	// ProcessNodeNames and KwokNodeNames name the nodes.
	ProcessNodeNames []string
	KwokNodeNames    []string
	// StartDuration is how long Start took.
	StartDuration time.Duration

	opts      Options
	comps     []*component
	front     *front // nil with one API server
	service   *front // the kubernetes Service's address; nil without a real node
	agentStop context.CancelFunc
	agentDone chan struct{}
	agentLog  *os.File
	stopOnce  sync.Once
	stopped   atomic.Bool
	stopErr   error
}

// Start starts the control plane opts describes and returns once every
// component is ready and every node is Ready. On failure nothing is left
// running and the error ends with the failing component's log.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.KwokStages == "" {
		opts.KwokStages = "fast"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	if opts.APIServers <= 0 {
		opts.APIServers = 1
	}
	bin, err := binDirPath()
	if err != nil {
		return nil, err
	}
	need := []string{Etcd, KubeAPIServer}
	if opts.Scheduler {
		need = append(need, KubeScheduler)
	}
	if opts.ControllerManager {
		need = append(need, KubeControllerManager)
	}
	if opts.KwokNodes > 0 {
		need = append(need, Kwok, kwokStagesDir)
	}
	if err := requireBinaries(bin, need...); err != nil {
		return nil, err
	}
	if opts.Kueue {
		if _, err := KueueDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	removeStale(opts.Dir)
	// Free ports are found by binding and releasing them, so another process
	// can take one before our component does: retry with new ports then.
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts, bin)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") {
			return e, err
		}
		opts.Logf("testenv: a port was taken meanwhile, starting again: %v", err)
	}
}

func start(ctx context.Context, opts Options, bin string) (_ *Env, err error) {
	began := time.Now()
	dir, err := os.MkdirTemp(opts.Dir, stalePrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the environment directory: %w", err)
	}
	e := &Env{Dir: dir, BinDir: bin, opts: opts}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("writing owner file: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	ports, err := freePorts(4 + opts.APIServers)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, schedPort, cmPort := ports[0], ports[1], ports[2], ports[3]
	apiPorts := ports[4:]
	for _, p := range apiPorts {
		e.URLs = append(e.URLs, "https://127.0.0.1:"+strconv.Itoa(p))
	}
	e.URL = e.URLs[0]
	if opts.APIServers > 1 {
		if e.front, err = startFront("127.0.0.1:0", e.URLs, filepath.Join(dir, "front.log")); err != nil {
			return nil, err
		}
		e.URL = e.front.url()
		opts.Logf("testenv: front of the %d API servers at %s (log %s)", opts.APIServers, e.URL, filepath.Join(dir, "front.log"))
	}

	files, err := writePKI(dir)
	if err != nil {
		return nil, err
	}
	childEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}

	// etcd: TLS with client certificates on both listeners (the peer one
	// too: a single member still listens there, and its /members answers
	// anyone). Metrics stay on the client listener (no
	// --listen-metrics-urls), behind the same certificates.
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "https://127.0.0.1:" + strconv.Itoa(peerPort)
	e.EtcdURL, e.EtcdPeerURL = etcdURL, peerURL
	etcd, err := e.launch(dir, Etcd, []string{
		"--name=testenv",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testenv=" + peerURL,
		"--cert-file=" + files.etcd.serverCert, "--key-file=" + files.etcd.serverKey,
		"--client-cert-auth", "--trusted-ca-file=" + files.etcd.caCert,
		"--peer-cert-file=" + files.etcd.serverCert, "--peer-key-file=" + files.etcd.serverKey,
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + files.etcd.caCert,
		"--unsafe-no-fsync",
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	}, childEnv)
	if err != nil {
		return nil, err
	}
	etcdClient, err := files.etcd.httpClient()
	if err != nil {
		return nil, err
	}
	etcd.ready = func(ctx context.Context) error {
		return httpOK(ctx, etcdClient, etcdURL+"/health", "", `"health":"true"`)
	}
	if err := waitReady(ctx, etcd, etcd.ready); err != nil {
		return nil, err
	}
	opts.Logf("testenv: etcd ready after %s", time.Since(began).Round(time.Millisecond))

	// kube-apiserver: every one the same but for its port, its scratch
	// directory and its audit log.
	apiArgs, err := apiServerArgs(opts, dir, etcdURL, files)
	if err != nil {
		return nil, err
	}
	ca := x509.NewCertPool()
	ca.AppendCertsFromPEM(files.caPEM)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca}}}
	launchAPIServer := func(i int) (*component, error) {
		name := APIServerName(i)
		args := append(slices.Clone(apiArgs),
			"--secure-port="+strconv.Itoa(apiPorts[i]),
			"--cert-dir="+filepath.Join(dir, strings.Replace(name, "kube-", "", 1)))
		if opts.AuditPodCreates {
			args = append(args, "--audit-log-path="+e.auditLogPath(i))
		}
		c, err := startComponent(dir, name, filepath.Join(bin, KubeAPIServer), args, childEnv)
		if err != nil {
			return nil, err
		}
		e.comps = append(e.comps, c)
		url := e.URLs[i]
		c.ready = func(ctx context.Context) error {
			err := httpOK(ctx, secure, url+"/readyz", files.adminToken, "")
			if err == nil {
				e.setServing(name, true) // ready at start or after Restart
			}
			return err
		}
		return c, nil
	}
	apiserver, err := launchAPIServer(0)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, apiserver, apiserver.ready); err != nil {
		return nil, err
	}
	opts.Logf("testenv: kube-apiserver ready after %s", time.Since(began).Round(time.Millisecond))

	e.Config = &rest.Config{
		Host:            e.URL,
		BearerToken:     files.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: files.caPEM},
		QPS:             1000,
		Burst:           2000,
	}
	if e.Client, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	if err := e.writeKubeconfigs(files); err != nil {
		return nil, err
	}

	// The other components start together; the slow part is each one's
	// own initialisation, which overlaps on two cores well enough.
	type readiness struct {
		c     *component
		check func(context.Context) error
	}
	var waits []readiness
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	healthz := func(port int) func(context.Context) error {
		return func(ctx context.Context) error {
			return httpOK(ctx, insecure, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "", "")
		}
	}
	// The other API servers start once the first has set up the cluster's
	// bootstrap objects, alongside the other components.
	for i := 1; i < opts.APIServers; i++ {
		c, err := launchAPIServer(i)
		if err != nil {
			return nil, err
		}
		waits = append(waits, readiness{c, c.ready})
	}
	if opts.Scheduler {
		kc := filepath.Join(dir, "kube-scheduler.kubeconfig")
		if err := writeKubeconfig(kc, e.URL, files.caPEM, "system:kube-scheduler", files.schedulerToken); err != nil {
			return nil, err
		}
		c, err := e.launch(dir, KubeScheduler, []string{
			"--kubeconfig=" + kc, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedPort),
			"--cert-dir=" + filepath.Join(dir, "kube-scheduler"),
		}, childEnv)
		if err != nil {
			return nil, err
		}
		waits = append(waits, readiness{c, healthz(schedPort)})
	}
	if opts.ControllerManager {
		kc := filepath.Join(dir, "kube-controller-manager.kubeconfig")
		if err := writeKubeconfig(kc, e.URL, files.caPEM, "system:kube-controller-manager", files.cmToken); err != nil {
			return nil, err
		}
		c, err := e.launch(dir, KubeControllerManager, []string{
			"--kubeconfig=" + kc, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cmPort),
			"--cert-dir=" + filepath.Join(dir, "kube-controller-manager"),
			"--service-account-private-key-file=" + files.saKey,
			"--root-ca-file=" + files.caCert,
			"--cluster-signing-cert-file=" + files.caCert, "--cluster-signing-key-file=" + files.caKey,
			"--controllers=*",
			// The defaults (20 QPS) make deleting a namespace of 1,000 pods
			// take a minute.
			"--kube-api-qps=200", "--kube-api-burst=400",
		}, childEnv)
		if err != nil {
			return nil, err
		}
		waits = append(waits, readiness{c, healthz(cmPort)})
	}
	if opts.KwokNodes > 0 {
		c, err := e.startKwok(ctx, dir, bin, files, childEnv)
		if err != nil {
			return nil, err
		}
		waits = append(waits, readiness{c, e.kwokNodesReady})
	}
	if opts.ProcessNodes > 0 {
		if err := e.startProcessNodes(files, strings.TrimPrefix(e.URL, "https://")); err != nil {
			return nil, err
		}
	}
	if opts.Kueue {
		if e.Kueue, err = e.startKueue(ctx, files); err != nil {
			return nil, err
		}
		opts.Logf("testenv: kueue ready after %s", time.Since(began).Round(time.Millisecond))
	}
	for _, w := range waits {
		if err := waitReady(ctx, w.c, w.check); err != nil {
			return nil, err
		}
		opts.Logf("testenv: %s ready after %s", w.c.name, time.Since(began).Round(time.Millisecond))
	}
	if e.ProcessNode != nil {
		select {
		case <-e.ProcessNode.Ready():
		case <-e.agentDone:
			return nil, fmt.Errorf("process nodes stopped before they were ready\n--- last lines of %s ---\n%s", e.agentLog.Name(), logging.TailFile(e.agentLog.Name(), 30))
		case <-ctx.Done():
			return nil, fmt.Errorf("process nodes not ready after %s: %w\n--- last lines of %s ---\n%s", opts.StartTimeout, ctx.Err(), e.agentLog.Name(), logging.TailFile(e.agentLog.Name(), 30))
		}
		opts.Logf("testenv: %d process node(s) ready after %s", opts.ProcessNodes, time.Since(began).Round(time.Millisecond))
	}
	if opts.RealNode {
		if err := e.startRealNode(ctx, began); err != nil {
			return nil, err
		}
	}
	e.StartDuration = time.Since(began)
	opts.Logf("testenv: control plane at %s ready in %s (dir %s)", e.URL, e.StartDuration.Round(time.Millisecond), dir)
	return e, nil
}

func (e *Env) launch(dir, name string, args, env []string) (*component, error) {
	c, err := startComponent(dir, name, filepath.Join(e.BinDir, name), args, env)
	if err != nil {
		return nil, err
	}
	e.comps = append(e.comps, c)
	return c, nil
}

// PIDs returns the process IDs of the running components (not of pods).
func (e *Env) PIDs() []int {
	var pids []int
	for _, c := range e.comps {
		pids = append(pids, c.pid())
	}
	return pids
}

// Stop stops the process nodes (killing their pods' processes) and every
// component, waits for them to exit and removes Dir. It may be called more
// than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		e.stopped.Store(true)
		if e.RealNode != nil {
			e.stopErr = e.RealNode.Stop()
		}
		if e.agentStop != nil {
			e.agentStop()
			<-e.agentDone
		}
		if e.agentLog != nil {
			_ = e.agentLog.Close()
		}
		// Clients of the API server first, then the API server, then etcd.
		var wg sync.WaitGroup
		var last []*component
		for _, c := range e.comps {
			if isAPIServer(c.name) || c.name == Etcd {
				last = append(last, c)
				continue
			}
			wg.Go(func() { c.stop(5 * time.Second) })
		}
		wg.Wait()
		for _, f := range e.fronts() {
			f.close() // its clients are gone; its goroutines must go too
		}
		for i := len(last) - 1; i >= 0; i-- {
			last[i].stop(10 * time.Second)
		}
		if e.Dir != "" {
			if err := os.RemoveAll(e.Dir); err != nil && e.stopErr == nil {
				e.stopErr = fmt.Errorf("removing %s: %w", e.Dir, err)
			}
		}
	})
	return e.stopErr
}
