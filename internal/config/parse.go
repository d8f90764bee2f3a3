package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Byte units for [ParseBytes] and [Bytes] entries: the unit a bare number is
// counted in. Spark's size suffixes are binary: 1k = 1024 bytes.
const (
	B   int64 = 1
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
)

// Infinite is the value of a duration entry set to "infinity", such as
// spark.dynamicAllocation.cachedExecutorIdleTimeout: a timeout that never
// expires.
const Infinite = time.Duration(math.MaxInt64)

var (
	errNegative   = errors.New("negative values are not allowed")
	errFractional = errors.New("fractional values are not supported")
	errTooLarge   = errors.New("the value is too large")
	errSyntax     = errors.New("invalid syntax")
)

// byteUnits maps Spark's size suffixes (JavaUtils.byteSuffixes) to bytes.
var byteUnits = map[string]int64{
	"b": B,
	"k": KiB, "kb": KiB,
	"m": MiB, "mb": MiB,
	"g": GiB, "gb": GiB,
	"t": TiB, "tb": TiB,
	"p": PiB, "pb": PiB,
}

// ParseBytes parses a size the way Spark's JavaUtils.byteStringAs does and
// returns it in bytes: a whole number with an optional, case-insensitive
// unit suffix b, k, m, g, t or p (optionally followed by b: "4gb"); the
// units are powers of 1024. A bare number is counted in defaultUnit (one of
// [B], [KiB], [MiB], [GiB], [TiB], [PiB]). Surrounding white space is
// ignored. Fractional sizes ("1.5g"), negative sizes, other suffixes and
// sizes beyond an int64 of bytes are rejected.
//
// Unlike byteStringAs, which converts to the default unit and truncates,
// ParseBytes always returns bytes, so "1k" with a default unit of MiB is
// 1024, not 0.
func ParseBytes(s string, defaultUnit int64) (int64, error) {
	return parseScaled(s, "size", byteUnits, "b, k, m, g, t or p", defaultUnit)
}

// timeUnits maps Spark's time suffixes (JavaUtils.timeSuffixes) to durations.
var timeUnits = map[string]time.Duration{
	"us":  time.Microsecond,
	"ms":  time.Millisecond,
	"s":   time.Second,
	"m":   time.Minute,
	"min": time.Minute,
	"h":   time.Hour,
	"d":   24 * time.Hour,
}

// ParseDuration parses a duration the way Spark's JavaUtils.timeStringAs
// does: a whole number with an optional, case-insensitive suffix us, ms, s,
// m or min, h or d. A bare number is counted in defaultUnit. Surrounding
// white space is ignored. Negative and fractional durations, other suffixes
// (including Go's "1h30m" form) and durations beyond time.Duration's range
// (about 292 years) are rejected.
func ParseDuration(s string, defaultUnit time.Duration) (time.Duration, error) {
	return parseScaled(s, "duration", timeUnits, "us, ms, s, m, min, h or d", defaultUnit)
}

// parseScaled is what ParseBytes and ParseDuration share: a whole number
// times the unit its suffix names in units (expected lists them for the
// error), or times defaultUnit when there is no suffix. what names the kind
// of value in errors.
func parseScaled[U ~int64](s, what string, units map[string]U, expected string, defaultUnit U) (U, error) {
	num, suffix, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: %w", what, s, err)
	}
	unit := defaultUnit
	if suffix != "" {
		u, ok := units[suffix]
		if !ok {
			return 0, fmt.Errorf("invalid %s %q: unknown unit %q: expected %s", what, s, suffix, expected)
		}
		unit = u
	}
	if unit <= 0 {
		return 0, fmt.Errorf("invalid %s %q: invalid default unit %v", what, s, defaultUnit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("invalid %s %q: %w", what, s, errTooLarge)
	}
	return U(n) * unit, nil
}

// splitNumber splits a trimmed, lower-cased "<digits><letters>" string into
// its number and suffix, and classifies what is wrong with anything else.
func splitNumber(s string) (num, suffix string, err error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, rest := t[:i], t[i:]
	switch {
	case t == "":
		return "", "", errors.New("empty value")
	case strings.HasPrefix(t, "-") && len(t) > 1 && t[1] >= '0' && t[1] <= '9':
		return "", "", errNegative
	case num == "":
		return "", "", errSyntax
	case strings.HasPrefix(rest, ".") && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
		return "", "", errFractional
	}
	for j := 0; j < len(rest); j++ {
		if rest[j] < 'a' || rest[j] > 'z' {
			return "", "", errSyntax
		}
	}
	return num, rest, nil
}

// FormatBytes formats n bytes with the largest unit that divides it exactly,
// in the syntax ParseBytes reads back: 1073741824 → "1g", 3072 → "3k",
// 1536 → "1536b".
func FormatBytes(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"p", PiB}, {"t", TiB}, {"g", GiB}, {"m", MiB}, {"k", KiB}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "b"
}

// FormatDuration formats d with the largest Spark time unit that divides it
// exactly, in the syntax ParseDuration reads back: 90s → "90s",
// 2h → "2h", 1500µs → "1500us". Precision below a microsecond is dropped,
// because Spark's syntax has no smaller unit.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	for _, u := range []struct {
		suffix string
		size   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
}
