package objstore

import (
	"time"
)

// Defaults of Config's tuning fields.
const (
	// DefaultPartSize is a multipart upload's part size: S3's minimum is
	// 5 MiB for all but the last part.
	DefaultPartSize = 8 << 20
	// DefaultMaxBackoff bounds the retryer's exponential backoff.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultMaxCopySize is the largest object one CopyObject copies
	// (S3's limit, 5 GiB); larger ones are copied in parts.
	DefaultMaxCopySize int64 = 5 << 30
	// DefaultCopyPartSize is the part size of a copy in parts.
	DefaultCopyPartSize int64 = 1 << 30
)

// Config says how to reach the store. Empty fields defer to the AWS SDK's
// default chain (environment, shared config files, web identity); zero
// tuning fields take their defaults (WithDefaults).
type Config struct {
	Endpoint  string // spark.hadoop.fs.s3a.endpoint; https is assumed without a scheme
	PathStyle bool   // spark.hadoop.fs.s3a.path.style.access
	Region    string // spark.hadoop.fs.s3a.endpoint.region

	// Static credentials (spark.hadoop.fs.s3a.access.key, .secret.key,
	// .session.token). Only the driver has them: they are not among
	// ExecutorKeys.
	AccessKey, SecretKey, SessionToken string

	// PartSize is the size of the parts a Writer or an Upload sends.
	PartSize int
	// MaxBackoff bounds the wait between a request's attempts; tests
	// shorten it so their retries are quick.
	MaxBackoff time.Duration
	// SignPayloadOverHTTP makes requests to a plain-http endpoint carry the
	// signed SHA-256 of their body, as the SDK does by default; unset, they
	// carry an unsigned payload and a signed CRC32 (see
	// addUnsignedPayloadOverHTTP). Set by the benchmark that compares both.
	SignPayloadOverHTTP bool
	// MaxCopySize is the largest object Copy copies in one request, and
	// CopyPartSize the part size of larger ones; tests lower them to reach
	// the copy in parts with small objects.
	MaxCopySize, CopyPartSize int64
}

// WithDefaults returns c with every zero tuning field set to its default:
// the one place defaults are applied (New and settings.ObjectStore call it).
func (c Config) WithDefaults() Config {
	if c.PartSize <= 0 {
		c.PartSize = DefaultPartSize
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxCopySize <= 0 {
		c.MaxCopySize = DefaultMaxCopySize
	}
	if c.CopyPartSize <= 0 {
		c.CopyPartSize = DefaultCopyPartSize
	}
	return c
}
