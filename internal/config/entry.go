package config

import (
	"errors"
	"strconv"
	"strings"
)

// Entry is a typed configuration key: its name, default, documentation and
// validation. Entries are package-level variables of this package, created
// by the constructors ([String], [Int], [Float], [Bool], [Bytes], [Duration],
// [Enum]) and registered when the package is initialized.
//
// An entry has a default, or falls back to another entry ([FallbackTo]), or
// is optional ([Optional]): then Get returns the zero value when the key is
// not set, and IsSet or Lookup tell the difference.
type Entry[T any] struct {
	meta
	parse    func(string) (T, error)
	format   func(T) string
	checks   []check[T]
	def      T
	fallback *Entry[T]
}

// meta is the part of an entry that does not depend on its type.
type meta struct {
	key, doc string
	// noun and suffix make the expected-value text: noun, then the checks'
	// descriptions, then suffix: "an integer" "≥ 0"; "a size such as 512m or
	// 4g" "(bare numbers are MiB)".
	noun, suffix string
	// typ and typSuffix make the short type shown in the docs around the
	// checks' descriptions: "integer" "≥ 0" "or `infinity`".
	typ, typSuffix string
	defString      string // the default as a string, when hasDefault
	hasDefault     bool
	opts           options
}

// Key returns the configuration key, such as "spark.executor.memory".
func (e *Entry[T]) Key() string { return e.key }

// Doc returns the entry's documentation.
func (e *Entry[T]) Doc() string { return e.doc }

// Get returns the explicitly set value of the entry in c if it is valid,
// else the default (or the fallback entry's value; the zero value for an
// optional entry). An invalid explicit value is reported by Load and
// Validate; Get does not fail.
func (e *Entry[T]) Get(c *Conf) T {
	if v, ok := e.Lookup(c); ok {
		return v
	}
	return e.Default(c)
}

// Lookup returns the explicitly set value of the entry in c, and whether it
// is set and valid.
func (e *Entry[T]) Lookup(c *Conf) (T, bool) {
	var zero T
	s, ok := c.Lookup(e.key)
	if !ok {
		return zero, false
	}
	v, err := e.parseChecked(s)
	if err != nil {
		return zero, false
	}
	return v, true
}

// IsSet reports whether the key is explicitly set in c (valid or not).
func (e *Entry[T]) IsSet(c *Conf) bool {
	_, ok := c.Lookup(e.key)
	return ok
}

// Default returns the value used when the key is not set in c: the
// fallback entry's value in c, the computed or declared default, or the
// zero value for an optional entry.
func (e *Entry[T]) Default(c *Conf) T {
	switch {
	case e.fallback != nil:
		return e.fallback.Get(c)
	case e.opts.defaultFunc != nil:
		v, err := e.parseChecked(e.opts.defaultFunc())
		if err == nil {
			return v
		}
	case e.hasDefault:
		return e.def
	}
	var zero T
	return zero
}

// Set sets the entry's key in c to v, formatted the way the entry parses
// it, and returns c.
func (e *Entry[T]) Set(c *Conf, v T) *Conf {
	return c.Set(e.key, e.format(v))
}

// Parse parses and checks a value for the entry. The error is a
// *ValueError.
func (e *Entry[T]) Parse(s string) (T, error) {
	return e.parseChecked(s)
}

func (e *Entry[T]) parseChecked(s string) (T, error) {
	v, err := e.parse(s)
	if err != nil {
		return v, e.valueError(s, detail(err))
	}
	for _, c := range e.checks {
		if !c.ok(v) {
			return v, e.valueError(s, "")
		}
	}
	return v, nil
}

func (e *Entry[T]) validate(s string) error {
	_, err := e.parseChecked(s)
	return err
}

func (e *Entry[T]) valueError(s, detail string) *ValueError {
	if e.opts.secret {
		s = RedactedValue
	}
	return &ValueError{Key: e.key, Value: s, Expected: e.expected(), Detail: detail}
}

// expected is the description of valid values used in errors.
func (m *meta) expected() string {
	parts := []string{m.noun}
	parts = append(parts, m.opts.checkDescs...)
	if m.suffix != "" {
		parts = append(parts, m.suffix)
	}
	return strings.Join(parts, " ")
}

// typeDoc is the short description of valid values used in the docs.
func (m *meta) typeDoc() string {
	parts := append([]string{m.typ}, m.opts.checkDescs...)
	if m.typSuffix != "" {
		parts = append(parts, m.typSuffix)
	}
	return strings.Join(parts, " ")
}

func (e *Entry[T]) metadata() *meta { return &e.meta }

func (e *Entry[T]) defaultString(c *Conf) string {
	switch {
	case e.fallback != nil:
		return c.Get(e.fallback.key)
	case e.opts.defaultFunc != nil:
		return e.opts.defaultFunc()
	case e.hasDefault:
		return e.defString
	}
	return ""
}

func (e *Entry[T]) defaultDoc() string {
	switch {
	case e.opts.defaultDoc != "":
		return e.opts.defaultDoc
	case e.fallback != nil:
		return "value of `" + e.fallback.key + "`"
	case e.hasDefault:
		return "`" + e.defString + "`"
	}
	return "(none)"
}

// detail turns a parse error into the detail of a ValueError: only the
// errors that say more than the expected-value text does.
func detail(err error) string {
	if errors.Is(err, strconv.ErrRange) {
		err = errTooLarge
	}
	for _, d := range []error{errNegative, errFractional, errTooLarge} {
		if errors.Is(err, d) {
			return d.Error()
		}
	}
	return ""
}
