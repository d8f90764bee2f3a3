package master

import (
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
)

// Kind is the kind of cluster manager a master URL selects.
type Kind int

// The kinds of master URL. The zero Kind is invalid.
const (
	// Local runs the executor inside the driver process: tasks are
	// goroutines ("local", "local[N]", "local[*]", "local[N,F]").
	Local Kind = iota + 1
	// LocalCluster runs executors as separate OS processes on this machine
	// ("local-cluster[N,C,M]"), as Spark's tests do.
	LocalCluster
	// Kubernetes runs executors as pods ("k8s://…").
	Kubernetes
)

func (k Kind) String() string {
	switch k {
	case Local:
		return "local"
	case LocalCluster:
		return "local-cluster"
	case Kubernetes:
		return "k8s"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// URL is a parsed master URL (spark.master).
type URL struct {
	// Raw is the URL as given.
	Raw  string
	Kind Kind
	// Threads is the number of task slots of Local: 1 for "local", N for
	// "local[N]", the number of CPUs this process may use for "local[*]".
	Threads int
	// MaxFailures is the number of attempts of each task: 1 for "local",
	// "local[N]" and "local[*]" (Spark does not retry tasks in local mode),
	// F for "local[N,F]", and 0 for the other kinds, meaning
	// spark.task.maxFailures.
	MaxFailures int
	// Executors, CoresPerExecutor and MemoryMiB are N, C and M of
	// "local-cluster[N,C,M]".
	Executors, CoresPerExecutor, MemoryMiB int
	// APIServer is the Kubernetes API server URL of "k8s://…", with https
	// when the URL has no scheme: "k8s://host:6443" → "https://host:6443".
	// With a list, "k8s://https://a:6443,https://b:6443", it is the first.
	APIServer string
	// APIServers are all the API servers of the URL, in order of
	// preference: several instances of one control plane, over one etcd.
	APIServers []string
}

func (u URL) String() string { return u.Raw }

// Endpoints are the API servers to use, in order of preference:
// APIServers, else APIServer alone (a URL built without Parse); nil for a
// master that names none.
func (u URL) Endpoints() []string {
	if len(u.APIServers) > 0 {
		return u.APIServers
	}
	if u.APIServer != "" {
		return []string{u.APIServer}
	}
	return nil
}

// ParseError reports a master URL that drover cannot use.
type ParseError struct {
	URL    string
	Reason string
}

const expectedForms = "local, local[N], local[*], local[N,F], local-cluster[N,C,M] or k8s://https://host:port"

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid master URL %q: %s; expected %s", e.URL, e.Reason, expectedForms)
}

// Parse parses a master URL in Spark's syntax (SparkMasterRegex and
// KubernetesUtils.parseMasterUrl): local, local[N], local[*], local[N,F],
// local[*,F], local-cluster[N,C,M] (white space inside the brackets is
// ignored) and k8s://[scheme://]host[:port][/path]. Spark's standalone,
// YARN and Mesos masters are rejected. The error is a *ParseError.
// local[*] has a task slot per GOMAXPROCS, which like the JVM's
// availableProcessors (Spark's local[*]) follows the container's CPU limit.
func Parse(s string) (URL, error) { return ParseWithCPUs(s, runtime.GOMAXPROCS(0)) }

// ParseWithCPUs is Parse with cpus task slots for local[*].
func ParseWithCPUs(s string, cpus int) (URL, error) {
	u := URL{Raw: s}
	fail := func(format string, args ...any) (URL, error) {
		return URL{}, &ParseError{URL: s, Reason: fmt.Sprintf(format, args...)}
	}
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return fail("the master URL is empty")

	case t == "local":
		u.Kind, u.Threads, u.MaxFailures = Local, 1, 1
		return u, nil

	case strings.HasPrefix(t, "local["):
		args, ok := bracketArgs(t, "local")
		if !ok {
			return fail("missing closing bracket")
		}
		if len(args) != 1 && len(args) != 2 {
			return fail("local takes a thread count and an optional failure count")
		}
		u.Kind, u.MaxFailures = Local, 1
		if args[0] == "*" {
			u.Threads = cpus
		} else {
			n, err := positive(args[0])
			if err != nil {
				return fail("thread count %s", err)
			}
			u.Threads = n
		}
		if len(args) == 2 {
			f, err := positive(args[1])
			if err != nil {
				return fail("failure count %s", err)
			}
			u.MaxFailures = f
		}
		return u, nil

	case strings.HasPrefix(t, "local-cluster["):
		args, ok := bracketArgs(t, "local-cluster")
		if !ok {
			return fail("missing closing bracket")
		}
		if len(args) != 3 {
			return fail("local-cluster takes three numbers: executors, cores per executor and MiB of memory per executor")
		}
		var n [3]int
		for i, name := range []string{"executor count", "cores per executor", "memory per executor (MiB)"} {
			v, err := positive(args[i])
			if err != nil {
				return fail("%s %s", name, err)
			}
			n[i] = v
		}
		u.Kind = LocalCluster
		u.Executors, u.CoresPerExecutor, u.MemoryMiB = n[0], n[1], n[2]
		return u, nil

	case strings.HasPrefix(t, "k8s://"):
		apis, err := ParseAPIServers(strings.TrimPrefix(t, "k8s://"))
		if err != nil {
			return fail("%s", err)
		}
		u.Kind, u.APIServer, u.APIServers = Kubernetes, apis[0], apis
		return u, nil

	case strings.HasPrefix(t, "spark://"):
		return fail("Spark standalone masters are not supported by drover")
	case t == "yarn" || strings.HasPrefix(t, "yarn-") || strings.HasPrefix(t, "yarn:"):
		return fail("YARN is not supported by drover")
	case strings.HasPrefix(t, "mesos://"):
		return fail("Mesos is not supported by drover")
	case strings.HasPrefix(t, "local"):
		return fail("unknown local mode")
	}
	return fail("unknown cluster manager")
}

// bracketArgs returns the comma-separated, trimmed arguments of
// "name[a,b,...]".
func bracketArgs(s, name string) ([]string, bool) {
	inner, ok := strings.CutPrefix(s, name+"[")
	if !ok {
		return nil, false
	}
	inner, ok = strings.CutSuffix(inner, "]")
	if !ok {
		return nil, false
	}
	args := strings.Split(inner, ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	return args, true
}

// positive parses a whole number ≥ 1 written with digits only, as Spark's
// master regexes require.
func positive(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("is missing")
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s is too large", s)
	}
	if n < 1 || digits != s {
		return 0, fmt.Errorf("must be ≥ 1")
	}
	return n, nil
}

// apiServer resolves the part of a k8s:// URL after the prefix as Spark's
// Utils.checkAndGetK8sMasterUrl does: no scheme means https; http is kept;
// other schemes are rejected.
// ParseAPIServers parses the API servers of a Kubernetes master URL (what
// follows "k8s://"), or of spark.kubernetes.apiserver.host: one address,
// or a comma-separated list of instances of one control plane. A list
// takes scheme://host[:port] entries: one scheme for all (the same CA and
// credentials serve every instance), no path, no entry twice.
func ParseAPIServers(s string) ([]string, error) {
	parts := strings.Split(s, ",")
	if len(parts) == 1 {
		api, err := apiServer(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		return []string{api}, nil
	}
	var out []string
	seen := map[string]int{}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("API server %d of the list is empty", i+1)
		}
		api, err := apiServer(p)
		if err != nil {
			return nil, fmt.Errorf("API server %d of the list (%s): %w", i+1, p, err)
		}
		u, _ := url.Parse(api) // apiServer parsed it
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("API server %d of the list (%s) has a path: a list takes scheme://host:port entries", i+1, p)
		}
		api = u.Scheme + "://" + strings.ToLower(u.Host)
		if j, dup := seen[api]; dup {
			return nil, fmt.Errorf("API server %d of the list (%s) repeats API server %d", i+1, p, j)
		}
		seen[api] = i + 1
		if len(out) > 0 && u.Scheme != strings.SplitN(out[0], ":", 2)[0] {
			return nil, fmt.Errorf("the list mixes http and https (%s, %s): every API server of one control plane takes the same scheme", out[0], api)
		}
		out = append(out, api)
	}
	return out, nil
}

func apiServer(rest string) (string, error) {
	if rest == "" {
		return "", fmt.Errorf("the Kubernetes API server address is missing")
	}
	if !strings.Contains(rest, "://") {
		rest = "https://" + rest
	}
	p, err := url.Parse(rest)
	if err != nil {
		return "", fmt.Errorf("the Kubernetes API server URL is malformed: %v", err)
	}
	if p.Scheme != "https" && p.Scheme != "http" {
		return "", fmt.Errorf("the Kubernetes API server scheme %q is not http or https", p.Scheme)
	}
	if p.Hostname() == "" {
		return "", fmt.Errorf("the Kubernetes API server host is missing")
	}
	if port := p.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("the Kubernetes API server port %q is not between 1 and 65535", port)
		}
	} else if strings.HasSuffix(p.Host, ":") {
		return "", fmt.Errorf("the Kubernetes API server port is empty")
	}
	if p.RawQuery != "" || p.Fragment != "" {
		return "", fmt.Errorf("the Kubernetes API server URL must not have a query or fragment")
	}
	// Keep the URL as given, with the scheme lower-cased as url.Parse does.
	return p.Scheme + rest[len(p.Scheme):], nil
}
