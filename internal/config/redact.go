package config

import (
	"regexp"
	"sync"
)

// RedactedValue replaces redacted values, as Spark's
// Utils.REDACTION_REPLACEMENT_TEXT does.
const RedactedValue = "*********(redacted)"

// defaultRedactionRegex is Spark's default spark.redaction.regex.
const defaultRedactionRegex = `(?i)secret|password|token|access[.]?key`

var (
	redactionCacheMu sync.Mutex
	redactionCache   = map[string]*regexp.Regexp{}
)

// redactionRegexp compiles spark.redaction.regex of c; an invalid pattern
// (which Validate reports) falls back to Spark's default.
func redactionRegexp(c *Conf) *regexp.Regexp {
	pattern := RedactionRegex.Get(c)
	redactionCacheMu.Lock()
	defer redactionCacheMu.Unlock()
	if re, ok := redactionCache[pattern]; ok {
		return re
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		re = regexp.MustCompile(defaultRedactionRegex)
	}
	if len(redactionCache) > 16 {
		clear(redactionCache)
	}
	redactionCache[pattern] = re
	return re
}

// redact reports whether the value of key must be hidden: its entry is
// secret, or the key or the value matches the redaction pattern.
func redact(re *regexp.Regexp, key, value string) bool {
	if e, ok := lookupEntry(key); ok && e.metadata().opts.secret {
		return true
	}
	return re.MatchString(key) || re.MatchString(value)
}

// validRegexp is the check of spark.redaction.regex.
func validRegexp(s string) bool {
	_, err := regexp.Compile(s)
	return err == nil
}

// Sensitive reports whether the value of key (or an environment variable
// named key) must be hidden in c: by its entry, or by spark.redaction.regex.
func (c *Conf) Sensitive(key, value string) bool { return redact(redactionRegexp(c), key, value) }
