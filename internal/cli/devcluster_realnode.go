package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-project/drover/internal/testenv"
)

// drover dev-cluster up --real-node: the dev cluster with a real kubelet,
// containerd and runc (testenv.Options.RealNode) beside its process node.
//
// A real node lives in a network namespace of its own, as the real-node
// tests do (hack/realnode-netns.sh): its pods' network stays off the
// user's machine, and nothing it starts reaches, or is reached from,
// another address. The user's kubectl and drover run in the host's
// namespace, though, and reach the cluster at 127.0.0.1. So up makes the
// loopback listeners of the API server and the object store here, and
// starts the daemon in a new network namespace (CLONE_NEWNET, no unshare
// binary needed) with them as inherited file descriptors: a socket stays
// in the namespace it was made in, and the daemon forwards what they accept
// to the servers inside. The node's pods reach the object store at the
// node's address (RealNode.Expose).

// The daemon's inherited file descriptors with --real-node: 3 is the
// readiness pipe (DevClusterReadyFD), then the listeners up made.
const (
	apiListenerFD = 4
	s3ListenerFD  = 5
)

// realNodePodTemplate, in the state directory, is a pod template that
// tolerates the real node's taint, for spark.kubernetes.{driver,executor}.
// podTemplateFile (Spark has no toleration key).
const realNodePodTemplate = "realnode-pod.yaml"

// devRealNodeState is the real node as the state file records it.
type devRealNodeState struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
	// Dir is the node's directory (containerd's and the kubelet's state);
	// Socket is containerd's and Containerd the directory of its ctr, for
	// image import.
	Dir         string `json:"dir"`
	Socket      string `json:"socket"`
	Containerd  string `json:"containerd"`
	PodTemplate string `json:"podTemplate"`
}

// checkRealNode checks, before anything starts, what up --real-node needs,
// building the kubelet and containerd with --build, and returns the drover
// checkout the daemon must run in. It lengthens up's default --timeout.
func checkRealNode(cmd *cobra.Command, o *devClusterOptions) (string, error) {
	if os.Geteuid() != 0 {
		return "", usageError(errors.New("--real-node needs root (containerd, runc, the kubelet's cgroups and mounts, a network namespace of its own): run it with sudo, or without --real-node"))
	}
	root, err := checkoutRoot()
	if err != nil {
		return "", usageError(fmt.Errorf("--real-node runs inside a drover checkout, whose hack/realnode/probe it builds with go as the node's pause image: %w", err))
	}
	if err := testenv.CheckRealNodePackages(); err != nil {
		return "", err
	}
	if err := testenv.CheckRealNodeBuilt(); err != nil {
		if !o.build {
			return "", fmt.Errorf("%w\n(or run `drover dev-cluster up --real-node --build`)", err)
		}
		if err := buildScript(cmd.Context(), cmd.ErrOrStderr(), "build-realnode.sh", "the real node's kubelet and containerd"); err != nil {
			return "", err
		}
		if err := testenv.CheckRealNodeBuilt(); err != nil {
			return "", err
		}
	}
	// The lock of the machine's one real node may have to wait, and the
	// node's start alone takes minutes on a busy machine.
	if !cmd.Flags().Changed("timeout") {
		o.timeout = 10 * time.Minute
	}
	return root, nil
}

// realNodeDaemon makes the loopback listeners of the API server and the
// object store in this (the host's) network namespace and sets daemon to
// start in a new one, in the checkout root, with them as apiListenerFD and
// s3ListenerFD. The returned func closes this process's copies once the
// daemon started, or failed to.
func realNodeDaemon(daemon *exec.Cmd, root string) (func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, what := range []string{"the API server", "the object store"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("listening on loopback for %s: %w", what, err)
		}
		// File is a duplicate: the socket lives on in it.
		f, err := ln.(*net.TCPListener).File()
		_ = ln.Close()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("passing the listener of %s to the daemon: %w", what, err)
		}
		files = append(files, f)
	}
	if len(daemon.ExtraFiles) != apiListenerFD-3 {
		closeAll()
		return nil, fmt.Errorf("the daemon has %d inherited files before its listeners, want %d", len(daemon.ExtraFiles), apiListenerFD-3)
	}
	daemon.ExtraFiles = append(daemon.ExtraFiles, files...)
	daemon.Args = append(daemon.Args, "--real-node")
	daemon.Dir = root
	if daemon.SysProcAttr == nil {
		daemon.SysProcAttr = &syscall.SysProcAttr{}
	}
	daemon.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	return closeAll, nil
}

// realNodeListeners, in the daemon, makes its new network namespace the
// run's (testenv.SetUpRunNetNS) and takes the listeners up passed it.
func realNodeListeners(ctx context.Context) (api, s3 net.Listener, err error) {
	if _, err := testenv.SetUpRunNetNS(ctx); err != nil {
		return nil, nil, fmt.Errorf("setting up the real node's network namespace (dev-cluster serve --real-node runs only as up --real-node starts it): %w", err)
	}
	var lns []net.Listener
	for _, fd := range []int{apiListenerFD, s3ListenerFD} {
		f := os.NewFile(uintptr(fd), fmt.Sprintf("listener-%d", fd))
		ln, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, nil, fmt.Errorf("taking the listener up passed as file descriptor %d: %w", fd, err)
		}
		lns = append(lns, ln)
	}
	return lns[0], lns[1], nil
}

// exposeRealNode forwards the listeners up made to the API server and the
// object store, exposes the store to the real node's pods, writes the pod
// template, and returns the URL users reach the API at, the node's state,
// and a func that stops the forwarders. The object store keeps its host
// address inside the namespace too, where the process node's pods (and
// put, cat) use it, so that one endpoint serves everything but the real
// node's pods; s3st says which is which.
func exposeRealNode(o *devClusterOptions, env *testenv.Env, srv *testenv.S3, s3st *devS3State, api, s3 net.Listener) (string, *devRealNodeState, func(), error) {
	var fwds []*testenv.Forward
	stop := func() {
		for _, f := range fwds {
			f.Close()
		}
	}
	fail := func(err error) (string, *devRealNodeState, func(), error) {
		stop()
		return "", nil, nil, err
	}
	logs := o.path(clusterDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fail(fmt.Errorf("creating %s: %w", logs, err))
	}
	apiAddr, s3Addr := api.Addr().String(), s3.Addr().String()
	store := strings.TrimPrefix(srv.Endpoint, "http://")
	for _, fw := range []struct {
		ln         net.Listener
		listen, to string
		log        string
	}{
		{ln: api, to: strings.TrimPrefix(env.URL, "https://"), log: "forward-api.log"},
		{ln: s3, to: store, log: "forward-s3.log"},
		{listen: s3Addr, to: store, log: "forward-s3-inside.log"},
	} {
		var f *testenv.Forward
		var err error
		if fw.ln != nil {
			f, err = testenv.ForwardFrom(fw.ln, fw.to, filepath.Join(logs, fw.log))
		} else {
			f, err = testenv.StartForward(fw.listen, fw.to, filepath.Join(logs, fw.log))
		}
		if err != nil {
			return fail(err)
		}
		fwds = append(fwds, f)
	}
	exposed, err := env.RealNode.Expose(store)
	if err != nil {
		return fail(fmt.Errorf("exposing the object store to the real node's pods: %w", err))
	}
	s3st.Endpoint, s3st.RealNodeEndpoint = "http://"+s3Addr, "http://"+exposed
	tol := testenv.RealNodeToleration
	template := fmt.Sprintf("apiVersion: v1\nkind: Pod\nspec:\n  tolerations:\n  - {key: %q, operator: %q, value: %q, effect: %q}\n", tol.Key, tol.Operator, tol.Value, tol.Effect)
	if err := os.WriteFile(o.path(realNodePodTemplate), []byte(template), 0o644); err != nil {
		return fail(fmt.Errorf("writing the real node's pod template: %w", err))
	}
	cdir, err := testenv.ContainerdDir()
	if err != nil {
		return fail(err)
	}
	n := env.RealNode
	return "https://" + apiAddr, &devRealNodeState{Name: n.Name, IP: n.IP, Dir: n.Dir, Socket: n.Socket, Containerd: cdir,
		PodTemplate: o.path(realNodePodTemplate)}, stop, nil
}

// pointKubeconfig is kubeconfig with every cluster's server at url: the
// API server's serving certificate names 127.0.0.1, whatever the port.
func pointKubeconfig(kubeconfig []byte, url string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = url
	}
	return clientcmd.Write(*cfg)
}

func printRealNodeUsage(out io.Writer, st *devClusterState) {
	n := st.RealNode
	if n == nil {
		return
	}
	fmt.Fprintf(out, "Real node %s (%s, in a network namespace of its own): pods that tolerate its taint and select it run there\n", n.Name, n.IP)
	fmt.Fprintf(out, "as containers of images imported into it (make image builds one; they need imagePullPolicy Never):\n")
	fmt.Fprintf(out, "  sudo drover dev-cluster image import bin/wordcount-image.tar\n")
	fmt.Fprintf(out, "  --conf spark.kubernetes.{driver,executor}.podTemplateFile=%s (the toleration)\n", n.PodTemplate)
	fmt.Fprintf(out, "  --conf spark.kubernetes.node.selector.%s=true --conf spark.kubernetes.container.image.pullPolicy=Never\n", testenv.RealNodeLabel)
	if st.S3 != nil {
		fmt.Fprintf(out, "  its pods reach the object store at %s: --conf spark.hadoop.fs.s3a.endpoint=%s\n", st.S3.RealNodeEndpoint, st.S3.RealNodeEndpoint)
	}
	fmt.Fprintln(out)
}

func newImageCommand(run func(func(*cobra.Command, *devClusterOptions) error) func(*cobra.Command, []string) error) *cobra.Command {
	image := &cobra.Command{Use: "image", Short: "Images of the dev cluster's real node (up --real-node)"}
	image.AddCommand(&cobra.Command{
		Use:   "import FILE...",
		Short: "Import image tarballs into the real node, where pods with imagePullPolicy Never find them",
		Long: `import loads docker-archive or OCI tarballs, such as ` + "`make image`" + ` writes (bin/wordcount-image.tar,
tagged drover.invalid/wordcount:dev), into the real node's containerd (ctr images import), as root. Pods on the
real node run them with spark.kubernetes.container.image=<tag> and imagePullPolicy Never; nothing is ever pulled.
Importing a tag again replaces the image.`,
		Example: `  make image && sudo drover dev-cluster image import bin/wordcount-image.tar`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range args {
				if fi, err := os.Stat(f); err != nil {
					return usageError(fmt.Errorf("image import takes image tarballs (such as make image writes): %w", err))
				} else if !fi.Mode().IsRegular() {
					return usageError(fmt.Errorf("image import takes image tarballs (such as make image writes): %s is not a regular file", f))
				}
			}
			return run(func(cmd *cobra.Command, o *devClusterOptions) error {
				st, err := readState(o)
				if !daemonUp(o) || err != nil {
					return fmt.Errorf("the dev cluster in %s is not up; start it with: drover dev-cluster up --real-node%s", o.stateDir, o.stateDirFlag())
				}
				if st.RealNode == nil {
					return fmt.Errorf("the dev cluster in %s has no real node, where images run: restart it with drover dev-cluster down%s, then up --real-node", o.stateDir, o.stateDirFlag())
				}
				if os.Geteuid() != 0 {
					return usageError(errors.New("image import needs root, as the real node's containerd does: run it with sudo"))
				}
				n := testenv.AttachRealNode(st.RealNode.Socket, st.RealNode.Containerd)
				for _, f := range args {
					if err := n.Import(cmd.Context(), f); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "imported %s into the real node %s\n", f, st.RealNode.Name)
				}
				return nil
			})(cmd, args)
		},
	})
	return image
}
