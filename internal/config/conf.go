package config

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Conf holds explicitly set configuration values by key, like Spark's
// SparkConf. Values are stored as strings; typed access and defaults come
// from the registered entries ([Entry.Get]).
//
// A Conf is safe for concurrent use. Clone is cheap: the copy shares the
// values until either side is changed. A nil *Conf reads as empty, so
// entry.Get(nil) is the entry's default.
type Conf struct {
	mu sync.RWMutex
	m  map[string]string
	// shared is set when m may be referenced by a clone; the next write
	// copies m first.
	shared bool
}

// New returns an empty configuration.
func New() *Conf {
	return &Conf{m: map[string]string{}}
}

// Set sets key to value without validating either, and returns c.
func (c *Conf) Set(key, value string) *Conf {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own()
	c.m[key] = value
	return c
}

// Unset removes an explicitly set key, and returns c.
func (c *Conf) Unset(key string) *Conf {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own()
	delete(c.m, key)
	return c
}

// own makes c.m a map that only c references. c.mu must be held.
func (c *Conf) own() {
	if c.m == nil {
		c.m = map[string]string{}
	} else if c.shared {
		c.m = maps.Clone(c.m)
	}
	c.shared = false
}

// Lookup returns the explicitly set value of key.
func (c *Conf) Lookup(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[key]
	return v, ok
}

// Get returns the explicitly set value of key, else the default of the
// registered entry for key as a string (following fallbacks), else "".
func (c *Conf) Get(key string) string {
	if v, ok := c.Lookup(key); ok {
		return v
	}
	if e, ok := lookupEntry(key); ok {
		return e.defaultString(c)
	}
	return ""
}

// Explicit returns a copy of the explicitly set values: what a driver sends
// to its executors.
func (c *Conf) Explicit() map[string]string {
	if c == nil {
		return map[string]string{}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := maps.Clone(c.m)
	if m == nil {
		m = map[string]string{}
	}
	return m
}

// Clone returns an independent copy of c. It is cheap: the values are
// copied only when either configuration is changed.
func (c *Conf) Clone() *Conf {
	if c == nil {
		return New()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.shared = true
	return &Conf{m: c.m, shared: true}
}

// Validate checks every explicitly set key that has a registered entry, and
// the rules that relate several keys (such as minExecutors ≤ maxExecutors).
// It returns all problems joined with errors.Join, in key order; each is a
// *ValueError or a relation error. Keys without an entry are not checked
// here: Load reports them.
func (c *Conf) Validate() error {
	return c.validate(nil)
}

// validate is Validate with the source of each value, for messages.
func (c *Conf) validate(source func(key string) string) error {
	explicit := c.Explicit()
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(explicit)) {
		e, ok := lookupEntry(key)
		if !ok {
			continue
		}
		if err := e.validate(explicit[key]); err != nil {
			var ve *ValueError
			if source != nil && errors.As(err, &ve) {
				ve.Source = source(key)
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Relations between keys are only meaningful once each key is valid.
		return errors.Join(errs...)
	}
	for _, r := range allRelations() {
		if err := r(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Redacted returns a copy of the explicitly set values in which the value of
// every key that is secret or matches spark.redaction.regex (by key or by
// value, as in Spark) is replaced by [RedactedValue]. Use it whenever a
// configuration is logged or shown.
func (c *Conf) Redacted() map[string]string {
	m := c.Explicit()
	re := redactionRegexp(c)
	for k, v := range m {
		if redact(re, k, v) {
			m[k] = RedactedValue
		}
	}
	return m
}

// String returns the redacted, explicitly set values as sorted key=value
// lines.
func (c *Conf) String() string {
	m := c.Redacted()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// LogValue logs the redacted, explicitly set values as a group.
func (c *Conf) LogValue() slog.Value {
	m := c.Redacted()
	attrs := make([]slog.Attr, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		attrs = append(attrs, slog.String(k, m[k]))
	}
	return slog.GroupValue(attrs...)
}
