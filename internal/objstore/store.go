package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// defaultRegion is S3A's and the AWS CLI's fallback: a store that ignores
// regions (most self-hosted ones) still needs requests signed for one.
const defaultRegion = "us-east-1"

// Store is a client of one S3-compatible store. The SDK's configuration
// (files, environment) is loaded on first use, so a process that never
// touches s3:// pays nothing. Safe for concurrent use.
type Store struct {
	cfg Config

	once   sync.Once
	client *s3.Client
	err    error
}

// New returns a store client for cfg, its zero tuning fields defaulted.
func New(cfg Config) *Store { return &Store{cfg: cfg.WithDefaults()} }

func (s *Store) s3(ctx context.Context) (*s3.Client, error) {
	s.once.Do(func() { s.client, s.err = newClient(ctx, s.cfg) })
	return s.client, s.err
}

func newClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		if cfg.AccessKey == "" || cfg.SecretKey == "" {
			return nil, errors.New("object store: spark.hadoop.fs.s3a.access.key and spark.hadoop.fs.s3a.secret.key must be set together")
		}
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)))
	}
	// Loading reads files and the environment only; credentials are
	// resolved on the first request.
	ac, err := awsconfig.LoadDefaultConfig(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return nil, fmt.Errorf("object store: loading the AWS configuration: %w", err)
	}
	if ac.Region == "" {
		ac.Region = defaultRegion
	}
	endpoint := cfg.Endpoint
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	return s3.NewFromConfig(ac, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.Retryer = newRetryer(cfg.MaxBackoff)
		// A ranged GET has no whole-object checksum to check; without this
		// the SDK logs so to stderr for every split a task reads.
		o.DisableLogOutputChecksumValidationSkipped = true
		if !cfg.SignPayloadOverHTTP {
			o.APIOptions = append(o.APIOptions, addUnsignedPayloadOverHTTP)
		}
	}), nil
}

// addUnsignedPayloadOverHTTP (unless Config.SignPayloadOverHTTP): requests
// to a plain-http endpoint carry an unsigned payload and a signed CRC32 of
// it (x-amz-checksum-crc32), as the SDK sends every request over https
// (there, with the CRC32 in a trailer). Left to itself, the SDK signs the
// SHA-256 of each body over http, which both sides compute: 0.7
// CPU-seconds per GiB uploaded here and as much in the store
// (docs/storage.md says why integrity holds without it).
//
// It adds to a client's stack the middleware that
// marks a plain-http request's payload unsigned. It goes right after the
// endpoint's resolution, where the request's URL is known, and before the
// checksum middleware, which then computes the CRC32 alone instead of the
// CRC32 and the SHA-256 in one pass.
func addUnsignedPayloadOverHTTP(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("drover:UnsignedPayloadOverHTTP",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok && !req.IsHTTPS() && v4.GetPayloadHash(ctx) == "" {
				ctx = v4.SetPayloadHash(ctx, "UNSIGNED-PAYLOAD")
			}
			return next.HandleFinalize(ctx, in)
		}), "ResolveEndpointV2", middleware.After)
}

// Error is a failed operation on a path: what was done, on which URI, and
// what the store said.
type Error struct {
	Op  string // "listing", "reading", …
	URI string
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Op, e.URI, describe(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

func opError(op string, u URI, err error) error {
	if err == nil {
		return nil
	}
	var oe *Error
	if errors.As(err, &oe) {
		return err
	}
	return &Error{Op: op, URI: u.String(), Err: err}
}

// describe is the store's answer without the SDK's request ids and
// operation names, and which key to check for the common mistakes.
func describe(err error) string {
	var api smithy.APIError
	if !errors.As(err, &api) {
		if cerr := connectionError(err); cerr != nil {
			// The network's error alone: the SDK's wrapping repeats the
			// request and an empty response.
			return fmt.Sprintf("%v (the store did not answer, %d attempts: check spark.hadoop.fs.s3a.endpoint, or AWS_ENDPOINT_URL_S3)", cerr, maxAttempts)
		}
		if strings.Contains(err.Error(), "get credentials") {
			return err.Error() + " (no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a workload " +
				"identity for the driver and executors, or spark.hadoop.fs.s3a.access.key and .secret.key for the driver)"
		}
		return err.Error()
	}
	msg := api.ErrorCode()
	if m := api.ErrorMessage(); m != "" {
		msg += ": " + m
	}
	switch api.ErrorCode() {
	case "NotFound": // a HEAD's answer, which has no body to say more
		msg = "NotFound: no such object, or no such bucket"
	case "NoSuchBucket":
		msg += " (check the bucket name and spark.hadoop.fs.s3a.endpoint)"
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
		"XAdminUserNotFound": // versitygw's answer to an unknown access key
		msg += " (check the credentials: spark.hadoop.fs.s3a.access.key and .secret.key on the driver, " +
			"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or the workload identity of the driver and executors)"
	case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		// Temporary credentials: the keys may be right and the token stale.
		msg += " (check the session token that goes with the keys: spark.hadoop.fs.s3a.session.token on the driver, " +
			"AWS_SESSION_TOKEN or the workload identity of the driver and executors; temporary credentials expire)"
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
		msg += " (check spark.hadoop.fs.s3a.endpoint.region)"
	}
	return msg
}

// errorCode is the store's error code in err ("NoSuchKey", …), or "" for
// an error that is no answer of the store's.
func errorCode(err error) string {
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		return api.ErrorCode()
	}
	return ""
}

// isNotFound reports whether err says the object does not exist.
func isNotFound(err error) bool {
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	}
	return false
}
