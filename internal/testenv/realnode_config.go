package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RealNodePodCIDR is the real node's pod range. It exists only inside the
// network namespace made for the run (hack/realnode-netns.sh), on the CNI
// bridge RealNodeBridge, so no pod address is ever reachable from, or aimed
// at, the machine's own network.
const (
	RealNodePodCIDR = "10.88.0.0/16"
	RealNodeBridge  = "drover-cni0"
	// RealNodeIface is the interface (a bridge without ports: these kernels
	// lack the dummy driver) hack/realnode-netns.sh makes in the run's
	// namespace; its address is the node's --node-ip (the kubelet
	// refuses a loopback node IP, and without one `kubectl logs` finds no
	// address: "no preferred addresses found").
	RealNodeIface = "drover0"
)

// writeCNIConf writes the real node's only network: a bridge with
// host-local addresses from RealNodePodCIDR, the bridge as the pods'
// gateway, no masquerading (nothing leaves the namespace) and no portmap
// (no iptables needed). host-local keeps its leases in dir, not in
// /var/lib/cni.
func writeCNIConf(confDir, dataDir string) error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "drover",
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      RealNodeBridge,
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": RealNodePodCIDR}}},
				"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				"dataDir": dataDir,
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(confDir, "10-drover.conflist"), b, 0o644)
}

// containerdConfig is containerd 2.x's configuration (version 3) for the
// real node: every path under dir, the CRI plugin on runc through its v2
// shim with cgroupfs, CNI from Debian's plugins with the conf above, and
// SandboxImage pinned (never pulled, never collected).
//
// restrict_oom_score_adj: root on these machines lacks CAP_SYS_RESOURCE, so
// no process may lower its oom_score_adj. Without it runc fails every
// sandbox ("can't get final child's PID from pipe: EOF"); with it containerd
// raises a container's oom_score_adj to at least its own.
//
// NRI is off: it would listen on /var/run/nri/nri.sock, shared by every
// containerd of the machine. Network namespaces of pods are mounted under
// the state directory, not /var/run/netns.
func containerdConfig(dir, socket, runc string, cniBinDirs []string) string {
	q := strconv.Quote
	dirs := make([]string, len(cniBinDirs))
	for i, d := range cniBinDirs {
		dirs[i] = q(d)
	}
	return fmt.Sprintf(`version = 3
root = %s
state = %s

[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins]
  [plugins."io.containerd.cri.v1.runtime"]
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    enable_cdi = false
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = %s
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [%s]
      conf_dir = %s
  [plugins."io.containerd.cri.v1.images"]
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = %s
  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
  [plugins."io.containerd.nri.v1.nri"]
    disable = true
  [plugins."io.containerd.internal.v1.opt"]
    path = %s
`, q(filepath.Join(dir, "root")), q(filepath.Join(dir, "state")), q(socket), q(socket+".ttrpc"),
		q(runc), strings.Join(dirs, ", "), q(filepath.Join(dir, "cni")), q(SandboxImage), q(filepath.Join(dir, "opt")))
}

// kubeletConfig is the KubeletConfiguration (JSON, which the kubelet reads
// as YAML) of the real node.
func kubeletConfig(dir, nodeIP, socket, caFile, certFile, keyFile string, port, healthzPort int) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// These machines mount the cgroup v1 controllers (cgroup2 only at
		// /sys/fs/cgroup/unified), which the kubelet refuses by default
		// since 1.35; containerd's runc uses cgroupfs there, not systemd.
		"failCgroupV1": false,
		"cgroupDriver": "cgroupfs",
		"failSwapOn":   false,
		// Node allocatable enforcement wants to write the kubepods
		// cgroup's limits at start; pod and container limits still apply.
		"enforceNodeAllocatable":   []string{},
		"containerRuntimeEndpoint": "unix://" + socket,
		"imageServiceEndpoint":     "unix://" + socket,
		// Its own ports, on the node's address: the kubelet API
		// (logs, exec, port-forward) for the API server, healthz on loopback.
		"address":            nodeIP,
		"port":               port,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        healthzPort,
		"tlsCertFile":        certFile,
		"tlsPrivateKeyFile":  keyFile,
		// Client certificates from the cluster's CA, as the process node
		// has them: the API server presents kube-apiserver-kubelet-client
		// (system:masters), which the webhook authorizer (a
		// SubjectAccessReview) lets in. No anonymous access.
		"authentication": map[string]any{
			"x509":      map[string]any{"clientCAFile": caFile},
			"webhook":   map[string]any{"enabled": false},
			"anonymous": map[string]any{"enabled": false},
		},
		"authorization": map[string]any{"mode": "Webhook"},
		"podLogsDir":    filepath.Join(dir, "pod-logs"),
		"staticPodPath": "",
		"resolvConf":    "",
		"clusterDomain": "cluster.local",
		// Test images are imported, never pulled: image GC must not remove
		// them, and the test machine's disk use must not evict pods.
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"evictionHard":                  map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		"serializeImagePulls":           false,
		"nodeStatusUpdateFrequency":     "2s",
		"nodeStatusReportFrequency":     "10s",
		"syncFrequency":                 "5s",
		"fileCheckFrequency":            "5s",
		"registerWithTaints":            []map[string]string{{"key": RealNodeTaint.Key, "value": RealNodeTaint.Value, "effect": string(RealNodeTaint.Effect)}},
		"rotateCertificates":            false,
		"serverTLSBootstrap":            false,
		"localStorageCapacityIsolation": true,
		// emptyDir usage is measured this often (default 1m): sizeLimit
		// evictions come within seconds, not a minute.
		"volumeStatsAggPeriod": "5s",
	}
	return json.MarshalIndent(cfg, "", "  ")
}
