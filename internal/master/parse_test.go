package master

import (
	"errors"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const forms = "local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port"

func TestParse(t *testing.T) {
	testCases := map[string]struct {
		in      string
		want    URL
		wantErr string
	}{
		"local": {
			in:   "local",
			want: URL{Raw: "local", Kind: Local, Threads: 1, MaxFailures: 1},
		},
		"local with N threads": {
			in:   "local[4]",
			want: URL{Raw: "local[4]", Kind: Local, Threads: 4, MaxFailures: 1},
		},
		"local with all CPUs": {
			in:   "local[*]",
			want: URL{Raw: "local[*]", Kind: Local, Threads: 8, MaxFailures: 1},
		},
		"local with failures": {
			in:   "local[4,2]",
			want: URL{Raw: "local[4,2]", Kind: Local, Threads: 4, MaxFailures: 2},
		},
		"local with all CPUs and failures, spaces": {
			in:   "local[* , 3]",
			want: URL{Raw: "local[* , 3]", Kind: Local, Threads: 8, MaxFailures: 3},
		},
		"local-cluster": {
			in:   "local-cluster[2,1,512]",
			want: URL{Raw: "local-cluster[2,1,512]", Kind: LocalCluster, Executors: 2, CoresPerExecutor: 1, MemoryMiB: 512},
		},
		"local-cluster with spaces": {
			in:   "local-cluster[ 3 , 2 , 1024 ]",
			want: URL{Raw: "local-cluster[ 3 , 2 , 1024 ]", Kind: LocalCluster, Executors: 3, CoresPerExecutor: 2, MemoryMiB: 1024},
		},
		"k8s with https": {
			in:   "k8s://https://10.0.0.1:6443",
			want: URL{Raw: "k8s://https://10.0.0.1:6443", Kind: Kubernetes, APIServer: "https://10.0.0.1:6443", APIServers: []string{"https://10.0.0.1:6443"}},
		},
		"k8s without scheme means https": {
			in:   "k8s://kubernetes.default.svc",
			want: URL{Raw: "k8s://kubernetes.default.svc", Kind: Kubernetes, APIServer: "https://kubernetes.default.svc", APIServers: []string{"https://kubernetes.default.svc"}},
		},
		"k8s host and port without scheme": {
			in:   "k8s://10.0.0.1:6443",
			want: URL{Raw: "k8s://10.0.0.1:6443", Kind: Kubernetes, APIServer: "https://10.0.0.1:6443", APIServers: []string{"https://10.0.0.1:6443"}},
		},
		"k8s with http is kept": {
			in:   "k8s://http://127.0.0.1:8080",
			want: URL{Raw: "k8s://http://127.0.0.1:8080", Kind: Kubernetes, APIServer: "http://127.0.0.1:8080", APIServers: []string{"http://127.0.0.1:8080"}},
		},
		"k8s with a path and upper-case scheme": {
			in:   "k8s://HTTPS://rancher.example.com/k8s/clusters/c-1",
			want: URL{Raw: "k8s://HTTPS://rancher.example.com/k8s/clusters/c-1", Kind: Kubernetes, APIServer: "https://rancher.example.com/k8s/clusters/c-1", APIServers: []string{"https://rancher.example.com/k8s/clusters/c-1"}},
		},
		"k8s with several API servers": {
			in: "k8s://https://a:6443, b:6443 ,https://C:6443",
			want: URL{Raw: "k8s://https://a:6443, b:6443 ,https://C:6443", Kind: Kubernetes, APIServer: "https://a:6443",
				APIServers: []string{"https://a:6443", "https://b:6443", "https://c:6443"}},
		},
		"k8s list with an empty entry": {
			in:      "k8s://https://a:6443,",
			wantErr: `invalid master URL "k8s://https://a:6443,": API server 2 of the list is empty; expected ` + forms,
		},
		"k8s list with a duplicate": {
			in:      "k8s://https://a:6443,https://b:6443,a:6443",
			wantErr: `invalid master URL "k8s://https://a:6443,https://b:6443,a:6443": API server 3 of the list (a:6443) repeats API server 1; expected ` + forms,
		},
		"k8s list mixing schemes": {
			in:      "k8s://https://a:6443,http://b:8080",
			wantErr: `invalid master URL "k8s://https://a:6443,http://b:8080": the list mixes http and https (https://a:6443, http://b:8080): every API server of one control plane takes the same scheme; expected ` + forms,
		},
		"k8s list with a bad scheme": {
			in:      "k8s://https://a:6443,ftp://b:21",
			wantErr: `invalid master URL "k8s://https://a:6443,ftp://b:21": API server 2 of the list (ftp://b:21): the Kubernetes API server scheme "ftp" is not http or https; expected ` + forms,
		},
		"k8s list with a path": {
			in:      "k8s://https://a:6443,https://b:6443/k8s",
			wantErr: `invalid master URL "k8s://https://a:6443,https://b:6443/k8s": API server 2 of the list (https://b:6443/k8s) has a path: a list takes scheme://host:port entries; expected ` + forms,
		},
		"k8s with IPv6": {
			in:   "k8s://[::1]:6443",
			want: URL{Raw: "k8s://[::1]:6443", Kind: Kubernetes, APIServer: "https://[::1]:6443", APIServers: []string{"https://[::1]:6443"}},
		},

		"empty": {
			in:      "",
			wantErr: `invalid master URL "": the master URL is empty; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with no threads": {
			in:      "local[]",
			wantErr: `invalid master URL "local[]": thread count is missing; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with zero threads": {
			in:      "local[0]",
			wantErr: `invalid master URL "local[0]": thread count must be ≥ 1; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with negative threads": {
			in:      "local[-1]",
			wantErr: `invalid master URL "local[-1]": thread count must be ≥ 1; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with letters": {
			in:      "local[abc]",
			wantErr: `invalid master URL "local[abc]": thread count "abc" is not a whole number; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with zero failures": {
			in:      "local[2,0]",
			wantErr: `invalid master URL "local[2,0]": failure count must be ≥ 1; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with three arguments": {
			in:      "local[1,2,3]",
			wantErr: `invalid master URL "local[1,2,3]": local takes a thread count and an optional failure count; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local without closing bracket": {
			in:      "local[4",
			wantErr: `invalid master URL "local[4": missing closing bracket; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local with huge thread count": {
			in:      "local[99999999999999999999]",
			wantErr: `invalid master URL "local[99999999999999999999]": thread count 99999999999999999999 is too large; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local-cluster with two arguments": {
			in:      "local-cluster[2,1]",
			wantErr: `invalid master URL "local-cluster[2,1]": local-cluster takes three numbers: executors, cores per executor and MiB of memory per executor; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local-cluster with no executors": {
			in:      "local-cluster[0,1,512]",
			wantErr: `invalid master URL "local-cluster[0,1,512]": executor count must be ≥ 1; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local-cluster with star": {
			in:      "local-cluster[*,1,512]",
			wantErr: `invalid master URL "local-cluster[*,1,512]": executor count "*" is not a whole number; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"local-cluster with no memory": {
			in:      "local-cluster[2,1,0]",
			wantErr: `invalid master URL "local-cluster[2,1,0]": memory per executor (MiB) must be ≥ 1; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"unknown local mode": {
			in:      "localhost",
			wantErr: `invalid master URL "localhost": unknown local mode; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"k8s without address": {
			in:      "k8s://",
			wantErr: `invalid master URL "k8s://": the Kubernetes API server address is missing; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"k8s with scheme only": {
			in:      "k8s://https://",
			wantErr: `invalid master URL "k8s://https://": the Kubernetes API server host is missing; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"k8s with another scheme": {
			in:      "k8s://ftp://host",
			wantErr: `invalid master URL "k8s://ftp://host": the Kubernetes API server scheme "ftp" is not http or https; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"k8s with a bad port": {
			in:      "k8s://host:99999",
			wantErr: `invalid master URL "k8s://host:99999": the Kubernetes API server port "99999" is not between 1 and 65535; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"yarn": {
			in:      "yarn",
			wantErr: `invalid master URL "yarn": YARN is not supported by drover; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"spark standalone": {
			in:      "spark://host:7077",
			wantErr: `invalid master URL "spark://host:7077": Spark standalone masters are not supported by drover; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"mesos": {
			in:      "mesos://host:5050",
			wantErr: `invalid master URL "mesos://host:5050": Mesos is not supported by drover; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
		"unknown scheme": {
			in:      "kubernetes://host",
			wantErr: `invalid master URL "kubernetes://host": unknown cluster manager; expected local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseWithCPUs(tc.in, 8)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want error %q", tc.in, got, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Errorf("Parse(%q) error (-want,+got):\n%s", tc.in, diff)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.URL != tc.in {
					t.Errorf("Parse(%q) error %T does not unwrap to a *ParseError for the URL", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestLocalStarUsesAvailableCPUs(t *testing.T) {
	got, err := Parse("local[*]")
	if err != nil {
		t.Fatal(err)
	}
	if want := runtime.GOMAXPROCS(0); got.Threads < 1 || got.Threads != want {
		t.Errorf("local[*] has %d threads, want %d", got.Threads, want)
	}
}

func TestKindString(t *testing.T) {
	testCases := map[string]struct {
		kind Kind
		want string
	}{
		"local":         {Local, "local"},
		"local-cluster": {LocalCluster, "local-cluster"},
		"kubernetes":    {Kubernetes, "k8s"},
		"zero":          {0, "Kind(0)"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := tc.kind.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
