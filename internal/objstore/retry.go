package objstore

import (
	"errors"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Retries: the SDK's standard retryer, set explicitly so the policy does
// not move with the SDK's defaults or the environment (AWS_MAX_ATTEMPTS):
// 5 attempts, as S3A's fs.s3a.attempts.maximum, with exponential backoff
// and jitter up to Config.MaxBackoff. It retries 5xx answers, throttling
// (SlowDown, 503) and connection errors; a permanent error (4xx) fails at
// once with the store's message. Unlike the SDK's default, retries draw on
// no quota: the SDK's (500 tokens, 14 a retry, given back only when the
// retry succeeds) is the whole client's, and an executor's tasks share one
// store, so a short outage used it up and every later transient error failed
// at its first attempt; S3A has no such limit.
const maxAttempts = 5

// retryReasons are the reasons of the retries this process makes, in the
// order of unreported.
var retryReasons = [...]string{"throttled", "server", "connection"}

// The process's retries are counted process-wide, since every Store of a
// process shares them and an executor reports them whatever Store made
// them: unreported since TakeRetries last took them, by retryReasons; and
// retried in all, by reason, a driver's executors' included (AddRetries),
// which internal/metrics exports as drover_objstore_retries_total.
var (
	unreported [len(retryReasons)]atomic.Int64
	retried    retryTotals
)

// retryTotals counts retries by reason; reasons are few and retries rare,
// so a locked map will do.
type retryTotals struct {
	mu       sync.Mutex
	byReason map[string]int64
}

func (t *retryTotals) add(reason string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byReason == nil {
		t.byReason = make(map[string]int64, len(retryReasons))
	}
	t.byReason[reason] += n
}

// RetryTotals returns the requests this process retried since it started,
// and those its executors reported (AddRetries), by reason: "throttled",
// "server" (5xx) or "connection". Reasons with none are left out.
func RetryTotals() map[string]int64 {
	retried.mu.Lock()
	defer retried.mu.Unlock()
	return maps.Clone(retried.byReason)
}

// TakeRetries returns the retries this process made since its last call,
// by reason (none: nil), for an executor to send to its driver.
func TakeRetries() map[string]int64 {
	var m map[string]int64
	for i := range unreported {
		if n := unreported[i].Swap(0); n > 0 {
			if m == nil {
				m = make(map[string]int64, len(retryReasons))
			}
			m[retryReasons[i]] = n
		}
	}
	return m
}

// AddRetries adds to this process's totals the retries another process
// reported (an executor's, with a task's status), by reason. Reasons this
// process does not know are counted as they are named.
func AddRetries(byReason map[string]int64) {
	for reason, n := range byReason {
		if n > 0 {
			retried.add(reason, n)
		}
	}
}

func newRetryer(maxBackoff time.Duration) aws.Retryer {
	return countingRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxBackoff
		o.RateLimiter = ratelimit.None
	})}
}

// countingRetryer is a retryer that counts the retries it allows.
type countingRetryer struct{ *retry.Standard }

// RetryDelay is asked once per retry the SDK is about to make.
func (r countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.Standard.RetryDelay(attempt, err)
	if derr == nil {
		reason := retryReason(err)
		retried.add(reason, 1)
		for i, r := range retryReasons {
			if r == reason {
				unreported[i].Add(1)
			}
		}
	}
	return d, derr
}

func retryReason(err error) string {
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		for _, t := range retry.DefaultThrottles {
			if t.IsErrorThrottle(err) == aws.TrueTernary {
				return "throttled"
			}
		}
		switch api.ErrorCode() {
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException":
			return "throttled"
		}
	}
	if re, ok := errors.AsType[*awshttp.ResponseError](err); ok && re.HTTPStatusCode() >= 500 {
		return "server"
	}
	return "connection"
}

// connectionError is err's failure to reach the store at all (nothing
// listening, an unknown host), or nil.
func connectionError(err error) error {
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return dns
	}
	if op, ok := errors.AsType[*net.OpError](err); ok {
		return op
	}
	return nil
}
