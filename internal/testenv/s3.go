package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/drover-project/drover/internal/envvar"
)

// VersityGWVersion is the version of versitygw, the S3-compatible server
// object-storage tests run; hack/build-versitygw.sh builds it.
const VersityGWVersion = "v1.8.0"

// VersityGW is the server's binary name.
const VersityGW = "versitygw"

// ErrMissingS3Server is wrapped by StartS3's error when versitygw is not
// built.
var ErrMissingS3Server = errors.New("versitygw (S3 test server) missing")

// S3 is a running versitygw serving S3 on loopback from a POSIX directory,
// with one account whose keys are random. Stop it with Stop.
type S3 struct {
	// Endpoint is http://127.0.0.1:<port>; requests need path-style
	// addressing and SigV4 signatures for Region.
	Endpoint  string
	Region    string
	AccessKey string
	SecretKey string
	// Dir holds the buckets (one directory each) and the server's log.
	Dir string

	client *s3.Client
	comp   *component
	once   sync.Once
	err    error
}

// VersityGWBinary returns the path of versitygw: in $DROVER_VERSITYGW, else
// ~/.cache/drover/versitygw/<version>/. It fails when it is missing,
// saying how to build it.
func VersityGWBinary() (string, error) {
	dir := os.Getenv(envvar.VersityGW)
	if dir == "" {
		cache := os.Getenv(envvar.Cache)
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("finding versitygw: set %s: %w", envvar.VersityGW, err)
			}
			cache = filepath.Join(home, ".cache", "drover")
		}
		dir = filepath.Join(cache, "versitygw", VersityGWVersion)
	}
	bin := filepath.Join(dir, VersityGW)
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: no %s; build it with ./hack/build-versitygw.sh in the drover repository (minutes, once; cached in ~/.cache/drover) or point %s at a directory holding it",
			ErrMissingS3Server, bin, envvar.VersityGW)
	}
	return bin, nil
}

// StartS3 starts versitygw on a free loopback port with its posix backend
// on a new directory under parent (os.TempDir() when empty), and returns
// once it answers HTTP. On failure nothing is left running.
func StartS3(ctx context.Context, parent string) (*S3, error) {
	bin, err := VersityGWBinary()
	if err != nil {
		return nil, err
	}
	if parent == "" {
		parent = os.TempDir()
	}
	// A port can be taken between finding it and the server binding it:
	// try again with another.
	for attempt := 1; ; attempt++ {
		s, err := startS3(ctx, bin, parent)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") {
			return s, err
		}
	}
}

func startS3(ctx context.Context, bin, parent string) (_ *S3, err error) {
	dir, err := os.MkdirTemp(parent, "drover-s3-")
	if err != nil {
		return nil, fmt.Errorf("creating the S3 server's directory: %w", err)
	}
	s := &S3{Dir: dir, Region: "us-east-1", AccessKey: "drover" + randomHex(6), SecretKey: randomHex(20)}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return nil, fmt.Errorf("creating the S3 server's data directory: %w", err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s.Endpoint = "http://" + addr
	// A clean environment: the server reads ROOT_* and VGW_* variables,
	// and nothing of the caller's may turn on another listener or backend.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"ROOT_ACCESS_KEY_ID=" + s.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + s.SecretKey}
	s.comp, err = startComponent(dir, VersityGW, bin,
		[]string{"--port", addr, "--region", s.Region, "--quiet", "posix", data}, env)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitHTTP(ctx, s.comp, s.Endpoint); err != nil {
		return nil, s.comp.failure(err)
	}
	s.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
	return s, nil
}

// waitHTTP waits until url answers HTTP at all (versitygw refuses unsigned
// requests, which is an answer) or c exits.
func waitHTTP(ctx context.Context, c *component, url string) error {
	hc := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-c.done:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("not answering on %s: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CreateBucket creates a bucket.
func (s *S3) CreateBucket(ctx context.Context, name string) error {
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", name, err)
	}
	return nil
}

// Client is an S3 client of the server with its account's keys, for tests
// that put or inspect objects without drover's code.
func (s *S3) Client() *s3.Client { return s.client }

// Conf is drover's configuration for the server: its endpoint, path-style
// addressing, region and the account's keys, as key=value.
func (s *S3) Conf() []string {
	return []string{
		"spark.hadoop.fs.s3a.endpoint=" + s.Endpoint,
		"spark.hadoop.fs.s3a.path.style.access=true",
		"spark.hadoop.fs.s3a.endpoint.region=" + s.Region,
		"spark.hadoop.fs.s3a.access.key=" + s.AccessKey,
		"spark.hadoop.fs.s3a.secret.key=" + s.SecretKey,
	}
}

// Env is the account's keys as the AWS SDK's default chain reads them
// (NAME=value), which executors take their credentials from. Instance
// metadata is turned off: tests must never reach for the network.
func (s *S3) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// PID is the server's process id.
func (s *S3) PID() int { return s.comp.pid() }

// Stop stops the server and removes its directory.
func (s *S3) Stop() error {
	s.once.Do(func() {
		if s.comp != nil {
			s.comp.stop(5 * time.Second)
		}
		if err := os.RemoveAll(s.Dir); err != nil {
			s.err = fmt.Errorf("removing %s: %w", s.Dir, err)
		}
	})
	return s.err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SignedProxy is a reverse proxy to an S3 endpoint for tests that watch or
// change what a client sends: it keeps the Host the client addressed, which
// SigV4 signs. rewrite, if not nil, runs on each request after that.
func SignedProxy(tb testing.TB, endpoint string, rewrite func(*httputil.ProxyRequest)) *httputil.ReverseProxy {
	tb.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		if rewrite != nil {
			rewrite(r)
		}
	}}
}
