package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// apiServerArgs are the flags every kube-apiserver of the environment
// shares: all but its port, its scratch directory and its audit log, which
// start adds per server (Options.APIServers run over the one etcd at
// etcdURL, with the same certificates and service-account keys).
func apiServerArgs(opts Options, dir, etcdURL string, files *pkiFiles) ([]string, error) {
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + files.etcd.caCert,
		"--etcd-certfile=" + files.etcd.clientCert, "--etcd-keyfile=" + files.etcd.clientKey,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--tls-cert-file=" + files.serverCert, "--tls-private-key-file=" + files.serverKey,
		"--client-ca-file=" + files.caCert,
		"--token-auth-file=" + files.tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.saPub,
		"--service-account-signing-key-file=" + files.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + files.kubeletClientCert, "--kubelet-client-key=" + files.kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Priority and fairness queues bursts (1,000 pods at once) and costs
		// start-up time; a test cluster has a single tenant.
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		"--profiling=false",
		// The endpoint of the "kubernetes" service would be 127.0.0.1, which
		// Endpoints validation rejects; process nodes give pods the API
		// server's address in KUBERNETES_SERVICE_HOST/PORT instead.
		"--endpoint-reconciler-type=none",
	}
	if opts.AuditPodCreates {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return nil, fmt.Errorf("writing the audit policy: %w", err)
		}
		apiArgs = append(apiArgs, "--audit-policy-file="+policy, "--audit-log-mode=blocking", "--audit-log-format=json")
	}
	if !opts.ControllerManager {
		// Without the service account controller no namespace gets its
		// "default" service account, and this plugin would reject every pod.
		apiArgs = append(apiArgs, "--disable-admission-plugins=ServiceAccount")
	}
	return apiArgs, nil
}

// APIServerName is the component name of the i-th API server (from 0), for
// Env.Kill and Env.Restart: KubeAPIServer for the first, then
// "kube-apiserver-2", "kube-apiserver-3", …
func APIServerName(i int) string {
	if i == 0 {
		return KubeAPIServer
	}
	return KubeAPIServer + "-" + strconv.Itoa(i+1)
}

func isAPIServer(name string) bool {
	return name == KubeAPIServer || strings.HasPrefix(name, KubeAPIServer+"-")
}

// APIServerConfig is Config aimed at the i-th API server (from 0, see
// URLs) only, bypassing the front: a copy, which the caller may change.
func (e *Env) APIServerConfig(i int) *rest.Config {
	c := rest.CopyConfig(e.Config)
	c.Host = e.URLs[i]
	return c
}

// writeKubeconfigs writes Kubeconfig, for URL, and Kubeconfigs, one per
// API server; with one server (no front) they are the same file.
func (e *Env) writeKubeconfigs(files *pkiFiles) error {
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := writeKubeconfig(e.Kubeconfig, e.URL, files.caPEM, "admin", files.adminToken); err != nil {
		return err
	}
	if e.front == nil {
		e.Kubeconfigs = []string{e.Kubeconfig}
		return nil
	}
	for i, url := range e.URLs {
		kc := filepath.Join(e.Dir, "kubeconfig-"+strconv.Itoa(i+1))
		if err := writeKubeconfig(kc, url, files.caPEM, "admin", files.adminToken); err != nil {
			return err
		}
		e.Kubeconfigs = append(e.Kubeconfigs, kc)
	}
	return nil
}
