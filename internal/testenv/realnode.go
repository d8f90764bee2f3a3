package testenv

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/logging"
)

// ContainerdVersion is the containerd hack/build-realnode.sh builds, into
// ~/.cache/drover/containerd/<version>/ (or $DROVER_CONTAINERD).
const ContainerdVersion = "v2.4.2"

// Kubelet is the kubelet binary, in the directory of the other Kubernetes
// binaries (hack/build-realnode.sh builds it; make test's don't need it).
const Kubelet = "kubelet"

// The real node carries RealNodeTaint, so that only pods with
// RealNodeToleration run as containers; RealNodeLabel is "true" on it.
var (
	RealNodeTaint      = corev1.Taint{Key: "drover.dev/real-node", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	RealNodeToleration = corev1.Toleration{Key: "drover.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
)

// RealNodeLabel marks the real node.
const RealNodeLabel = "drover.dev/real-node"

// RealNode is a kubelet with containerd and runc, registered as a node of an
// Env: pods bound to it run as containers of real images.
type RealNode struct {
	// Name is the node's name; IP its InternalIP (RealNodeIface's address).
	Name, IP string
	// Dir holds containerd's and the kubelet's state, configuration and
	// logs (containerd.log, kubelet.log). Stop removes it.
	Dir string
	// Socket is containerd's; Ctr runs ctr against it.
	Socket     string
	containerd string // directory of containerd, its shim and ctr
	comps      []*component
	stopOnce   sync.Once
	stopErr    error

	mu       sync.Mutex
	forwards []*front // Expose's
	lock     *os.File // lockRealNode's, held until Stop
}

// ContainerdDir returns the directory of containerd, its runc shim and ctr:
// $DROVER_CONTAINERD, else ~/.cache/drover/containerd/<version>.
func ContainerdDir() (string, error) {
	if d := os.Getenv(envvar.Containerd); d != "" {
		return filepath.Abs(d)
	}
	k8s, err := binDirPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(filepath.Dir(k8s)), "containerd", ContainerdVersion), nil
}

// healthzClient asks the kubelet's healthz; no idle connections stay
// behind (goleak checks the package's tests).
var healthzClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// ErrNoRunNetNS is wrapped by StartRealNode's error when the process is not
// inside a network namespace made for the run.
var ErrNoRunNetNS = errors.New("not inside a network namespace made for the run")

// RunNetNSAddr checks that this process runs inside a network namespace
// made for the run by hack/realnode-netns.sh — loopback,
// RealNodeIface and, once pods ran, the CNI bridge and its veths, nothing
// else — and returns RealNodeIface's first IPv4 address. Every real-node test
// needs it: nothing they start may reach an address outside.
func RunNetNSAddr() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	addr := ""
	for _, ifc := range ifaces {
		switch {
		case ifc.Flags&net.FlagLoopback != 0, ifc.Name == RealNodeBridge, strings.HasPrefix(ifc.Name, "veth"):
		case ifc.Name == RealNodeIface:
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				// The first: the node's; 10.0.0.1, the kubernetes
				// Service's, follows it.
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && addr == "" {
					addr = ipn.IP.String()
				}
			}
		default:
			return "", fmt.Errorf("%w: interface %s is here; run through hack/realnode-netns.sh", ErrNoRunNetNS, ifc.Name)
		}
	}
	if addr == "" {
		return "", fmt.Errorf("%w: no %s with an IPv4 address; run through hack/realnode-netns.sh", ErrNoRunNetNS, RealNodeIface)
	}
	return addr, nil
}

// StartRealNode starts containerd and a kubelet registered as node name of
// e, imports the docker-archive or OCI tarballs images into containerd's
// k8s.io namespace (the sandbox image SandboxImage among them), and returns
// once the node is Ready. It needs the kubelet and containerd built
// (hack/build-realnode.sh), Debian's runc and CNI plugins
// (hack/install-test-packages.sh), root, and the run's network namespace
// (RunNetNSAddr). On failure nothing is left running. What real nodes of
// dead test processes left is cleaned up first (cleanStaleRealNodes).
func (e *Env) StartRealNode(ctx context.Context, name string, images ...string) (_ *RealNode, err error) {
	ip, err := RunNetNSAddr()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("a real node needs root (containerd, runc, the kubelet's cgroups and mounts)")
	}
	if err := CheckRealNodeBuilt(); err != nil {
		return nil, err
	}
	if err := CheckRealNodePackages(); err != nil {
		return nil, err
	}
	cdir, err := ContainerdDir()
	if err != nil {
		return nil, err
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, err
	}
	cniBin := realNodeCNIBin
	lock, err := lockRealNode(ctx)
	if err != nil {
		return nil, err
	}
	cleanStaleRealNodes()
	// Short: containerd's socket path must fit a sockaddr_un.
	dir, err := os.MkdirTemp("", realNodePrefix)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		_ = lock.Close()
		return nil, err
	}
	n := &RealNode{Name: name, IP: ip, Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), containerd: cdir, lock: lock}
	defer func() {
		if err != nil {
			_ = n.Stop()
		}
	}()
	// The kubelet's start (cgroups, cAdvisor, registration) takes longer
	// than the control plane's on a busy machine.
	timeout := max(e.opts.StartTimeout, 3*time.Minute)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()

	if err := writeCNIConf(filepath.Join(dir, "cni"), filepath.Join(dir, "cni-ipam")); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(dir, n.Socket, runc, []string{cniBin})), 0o644); err != nil {
		return nil, err
	}
	// The shim is found on PATH, runc by its configured path.
	env := []string{"PATH=" + cdir + ":" + os.Getenv("PATH"), "HOME=" + dir}
	c, err := startComponent(dir, "containerd", filepath.Join(cdir, "containerd"), []string{"--config=" + cfg, "--log-level=info"}, env)
	if err != nil {
		return nil, err
	}
	n.comps = append(n.comps, c)
	if err := waitReady(ctx, c, func(ctx context.Context) error { _, err := n.Ctr(ctx, "version"); return err }); err != nil {
		return nil, err
	}
	e.opts.Logf("testenv: containerd ready after %s", time.Since(began).Round(time.Millisecond))
	if err := n.Import(ctx, images...); err != nil {
		return nil, err
	}
	e.opts.Logf("testenv: %d image archive(s) imported after %s", len(images), time.Since(began).Round(time.Millisecond))

	kubeletArgs, healthz, err := n.writeKubeletFiles(e)
	if err != nil {
		return nil, err
	}
	k, err := startComponent(dir, Kubelet, filepath.Join(e.BinDir, Kubelet), kubeletArgs, env)
	if err != nil {
		return nil, err
	}
	n.comps = append(n.comps, k)
	if err := waitReady(ctx, k, func(ctx context.Context) error {
		if err := httpOK(ctx, healthzClient, "http://127.0.0.1:"+strconv.Itoa(healthz)+"/healthz", "", ""); err != nil {
			return err
		}
		node, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready yet", name)
	}); err != nil {
		return nil, err
	}
	e.opts.Logf("testenv: real node %s (%s) Ready after %s (dir %s)", name, ip, time.Since(began).Round(time.Millisecond), dir)
	return n, nil
}

// writeKubeletFiles writes the kubelet's credentials (a client certificate
// system:node:<name> in system:nodes and system:masters, as the process
// node's token has; a serving certificate for the node's address), its
// kubeconfig and configuration, and returns its arguments and healthz port.
func (n *RealNode) writeKubeletFiles(e *Env) ([]string, int, error) {
	ca, err := loadAuthority(e.Dir)
	if err != nil {
		return nil, 0, err
	}
	clientCert, clientKey, err := ca.issue("system:node:"+n.Name, []string{"system:nodes", "system:masters"}, nil)
	if err != nil {
		return nil, 0, err
	}
	servingCert, servingKey, err := ca.issue(n.Name, nil, []string{n.IP, n.Name})
	if err != nil {
		return nil, 0, err
	}
	var f struct{ ca, clientCert, clientKey, cert, key string }
	if err := writeFiles(n.Dir, []pkiFile{
		{&f.ca, "ca.crt", ca.certPEM},
		{&f.clientCert, "kubelet-client.crt", clientCert}, {&f.clientKey, "kubelet-client.key", clientKey},
		{&f.cert, "kubelet.crt", servingCert}, {&f.key, "kubelet.key", servingKey},
	}); err != nil {
		return nil, 0, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["drover"] = &clientcmdapi.Cluster{Server: e.URL, CertificateAuthority: f.ca}
	kc.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificate: f.clientCert, ClientKey: f.clientKey}
	kc.Contexts["drover"] = &clientcmdapi.Context{Cluster: "drover", AuthInfo: "kubelet"}
	kc.CurrentContext = "drover"
	kubeconfig := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, 0, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, 0, err
	}
	cfg, err := kubeletConfig(n.Dir, n.IP, n.Socket, f.ca, f.cert, f.key, ports[0], ports[1])
	if err != nil {
		return nil, 0, err
	}
	cfgPath := filepath.Join(n.Dir, "kubelet-config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, 0, err
	}
	return []string{
		"--config=" + cfgPath,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(n.Dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.Dir, "kubelet-pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--node-labels=" + RealNodeLabel + "=true",
		"--v=2",
	}, ports[1], nil
}

// loadAuthority reads the environment's CA (ca.crt, ca.key in dir).
func loadAuthority(dir string) (*authority, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("reading the CA in %s: no PEM data", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the CA key in %s is a %T, not ECDSA", dir, key)
	}
	return &authority{cert: cert, key: ec, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// Ctr runs ctr against the node's containerd in the k8s.io namespace (the
// kubelet's) and returns its combined output.
func (n *RealNode) Ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.containerd, "ctr"), append([]string{"--address=" + n.Socket, "--namespace=k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Logs returns the last lines of the containerd or kubelet log.
func (n *RealNode) Logs(component string, lines int) string {
	return logging.TailFile(filepath.Join(n.Dir, component+".log"), lines)
}

// Stop stops the kubelet, kills every container (ctr), stops containerd
// and the shims it started, unmounts what the kubelet and containerd
// mounted under Dir and removes it, and the kubelet's kubepods cgroups when
// no other real node lives. It may be called more than once.
func (n *RealNode) Stop() error {
	n.stopOnce.Do(func() {
		n.mu.Lock()
		for _, f := range n.forwards {
			f.close()
		}
		n.forwards = nil
		n.mu.Unlock()
		for _, c := range slices.Backward(n.comps) {
			if c.name == Kubelet {
				c.stop(10 * time.Second)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := n.Ctr(ctx, "tasks", "ls", "-q"); err == nil {
			for id := range strings.FieldsSeq(out) {
				_, _ = n.Ctr(ctx, "tasks", "delete", "--force", id)
			}
		}
		for _, c := range n.comps {
			c.stop(10 * time.Second)
		}
		killShims(n.Socket)
		unmountUnder(n.Dir)
		removeLinksInto("/var/log/containers", n.Dir)
		if !otherRealNodeAlive(n.Dir) {
			removeKubepodsCgroups()
		}
		if err := os.RemoveAll(n.Dir); err != nil {
			n.stopErr = fmt.Errorf("removing %s: %w", n.Dir, err)
		}
		_ = n.lock.Close()
	})
	return n.stopErr
}

// killShims kills the containerd shims serving the containerd at socket
// (they run detached from it, in process groups of their own).
func killShims(socket string) {
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Contains(args, socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeLinksInto removes the symbolic links in dir that point under
// target: the kubelet links each container's log from /var/log/containers.
func removeLinksInto(dir, target string) {
	entries, _ := os.ReadDir(dir)
	for _, ent := range entries {
		p := filepath.Join(dir, ent.Name())
		if dest, err := os.Readlink(p); err == nil && strings.HasPrefix(dest, target+"/") {
			_ = os.Remove(p)
		}
	}
}

// unmountUnder detaches every mount point under dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			points = append(points, fields[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}
