package objstore

import "time"

// SetCopyLimits lowers the size past which Copy copies in parts, so a test
// can reach that path with small objects; the returned func restores them.
func SetCopyLimits(maxSize, partSize int64) (restore func()) {
	oldMax, oldPart := maxCopySize, copyPartSize
	maxCopySize, copyPartSize = maxSize, partSize
	return func() { maxCopySize, copyPartSize = oldMax, oldPart }
}

// SetMaxBackoff shortens the retryer's backoff so a test's retries are
// quick; the returned func restores it.
func SetMaxBackoff(d time.Duration) (restore func()) {
	old := maxBackoff
	maxBackoff = d
	return func() { maxBackoff = old }
}

// Retries is the retry counter.
var Retries = retries

// SetUnsignedPayloadOverHTTP sets whether new clients send plain-http
// payloads unsigned; the returned func restores it.
func SetUnsignedPayloadOverHTTP(on bool) (restore func()) {
	old := unsignedPayloadOverHTTP
	unsignedPayloadOverHTTP = on
	return func() { unsignedPayloadOverHTTP = old }
}
