package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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

// Options.

// Option changes how an entry is registered. Options that carry a typed
// value ([AtLeast], [InRange], [Check], [FallbackTo]) must match the entry's
// type; a mismatch panics when the package is initialized.
type Option interface {
	apply(*options)
}

type options struct {
	optional    bool
	secret      bool
	infinity    bool
	env         []string
	defaultDoc  string
	defaultFunc func() string
	checks      []any // check[T]
	checkDescs  []string
	fallback    any // *Entry[T]
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// Optional makes an entry without a default: Get returns the zero value
// when the key is not set, and the default given to the constructor is
// ignored.
func Optional() Option {
	return optionFunc(func(o *options) { o.optional = true })
}

// Secret marks an entry whose value must never be shown: Redacted, String,
// errors and the docs mask it.
func Secret() Option {
	return optionFunc(func(o *options) { o.secret = true })
}

// Env names environment variables Load reads the value from (the first
// non-empty one wins). Their precedence is above the properties file and
// below --conf.
func Env(names ...string) Option {
	return optionFunc(func(o *options) { o.env = append(o.env, names...) })
}

// DefaultDoc sets how the docs show the default, for defaults that are
// computed or have a special meaning.
func DefaultDoc(text string) Option {
	return optionFunc(func(o *options) { o.defaultDoc = text })
}

// DefaultFunc computes the default when it is needed (such as the temporary
// directory); doc is how the docs show it.
func DefaultFunc(f func() string, doc string) Option {
	return optionFunc(func(o *options) { o.defaultFunc, o.defaultDoc = f, doc })
}

// Infinity makes an Int or Duration entry accept "infinity"
// (case-insensitive) as math.MaxInt32 (Spark's Int.MaxValue) or
// [Infinite].
func Infinity() Option {
	return optionFunc(func(o *options) { o.infinity = true })
}

type check[T any] struct {
	desc string
	ok   func(T) bool
}

func (c check[T]) apply(o *options) {
	o.checks = append(o.checks, c)
	o.checkDescs = append(o.checkDescs, c.desc)
}

// Check adds a validation: values v for which ok(v) is false are rejected,
// and desc (such as "> 0") is added to the description of valid values.
func Check[T any](desc string, ok func(T) bool) Option {
	return check[T]{desc: desc, ok: ok}
}

// AtLeast rejects values below n. Its type must match the entry's:
// AtLeast(1) for Int, AtLeast(0.0) for Float, AtLeast(int64(1)) for Bytes.
func AtLeast[T cmp.Ordered](n T) Option {
	return check[T]{desc: "≥ " + fmt.Sprint(n), ok: func(v T) bool { return v >= n }}
}

// InRange rejects values outside [lo, hi].
func InRange[T cmp.Ordered](lo, hi T) Option {
	return check[T]{
		desc: fmt.Sprintf("between %v and %v", lo, hi),
		ok:   func(v T) bool { return v >= lo && v <= hi },
	}
}

type fallbackOption[T any] struct{ e *Entry[T] }

func (f fallbackOption[T]) apply(o *options) { o.fallback = f.e }

// FallbackTo makes an entry default to another entry's value, as Spark's
// fallbackConf does: spark.driver.bindAddress defaults to spark.driver.host.
func FallbackTo[T any](e *Entry[T]) Option {
	return fallbackOption[T]{e: e}
}

// Constructors.

// String registers a string entry.
func String(key, def, doc string, opts ...Option) *Entry[string] {
	return register(key, doc, def, opts, func(*options) kind[string] {
		return kind[string]{
			noun: "a string", typ: "string",
			parse:  func(s string) (string, error) { return s, nil },
			format: func(s string) string { return s },
		}
	})
}

// Int registers an integer entry. Values are 32-bit like Spark's intConf.
func Int(key string, def int, doc string, opts ...Option) *Entry[int] {
	return registerDefault(key, doc, strconv.Itoa(def), true, opts, func(o *options) kind[int] {
		k := kind[int]{noun: "an integer", typ: "integer", format: strconv.Itoa}
		k.parse = func(s string) (int, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			return int(n), err
		}
		if o.infinity {
			k.suffix, k.typSuffix = "or infinity", "or `infinity`"
			parse := k.parse
			k.parse = func(s string) (int, error) {
				if strings.EqualFold(strings.TrimSpace(s), "infinity") {
					return math.MaxInt32, nil
				}
				return parse(s)
			}
			k.format = func(n int) string {
				if n == math.MaxInt32 {
					return "infinity"
				}
				return strconv.Itoa(n)
			}
		}
		return k
	})
}

// Float registers a floating-point entry. NaN and infinities are rejected.
func Float(key string, def float64, doc string, opts ...Option) *Entry[float64] {
	return register(key, doc, strconv.FormatFloat(def, 'g', -1, 64), opts, func(*options) kind[float64] {
		return kind[float64]{
			noun: "a number", typ: "number",
			parse: func(s string) (float64, error) {
				f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
					err = errSyntax
				}
				return f, err
			},
			format: func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
		}
	})
}

// Bool registers a boolean entry: true or false, case-insensitive, as
// Spark's booleanConf accepts.
func Bool(key string, def bool, doc string, opts ...Option) *Entry[bool] {
	return register(key, doc, strconv.FormatBool(def), opts, func(*options) kind[bool] {
		return kind[bool]{
			noun: "true or false", typ: "boolean",
			parse: func(s string) (bool, error) {
				switch strings.ToLower(strings.TrimSpace(s)) {
				case "true":
					return true, nil
				case "false":
					return false, nil
				}
				return false, errSyntax
			},
			format: strconv.FormatBool,
		}
	})
}

// Bytes registers a size entry whose value is in bytes; def and values use
// the syntax of [ParseBytes], and bare numbers are counted in defaultUnit.
func Bytes(key, def string, defaultUnit int64, doc string, opts ...Option) *Entry[int64] {
	unit := unitName(defaultUnit)
	return register(key, doc, def, opts, func(*options) kind[int64] {
		return kind[int64]{
			noun: "a size such as 512m or 4g", suffix: "(bare numbers are " + unit + ")",
			typ: "size", typSuffix: "(bare number: " + unit + ")",
			parse:  func(s string) (int64, error) { return ParseBytes(s, defaultUnit) },
			format: FormatBytes,
		}
	})
}

// Duration registers a duration entry; def and values use the syntax of
// [ParseDuration], and bare numbers are counted in defaultUnit.
func Duration(key, def string, defaultUnit time.Duration, doc string, opts ...Option) *Entry[time.Duration] {
	unit := durationUnitName(defaultUnit)
	return register(key, doc, def, opts, func(o *options) kind[time.Duration] {
		k := kind[time.Duration]{
			noun: "a duration such as 30s, 5m or 2h", suffix: "(bare numbers are " + unit + ")",
			typ: "duration", typSuffix: "(bare number: " + unit + ")",
			parse:  func(s string) (time.Duration, error) { return ParseDuration(s, defaultUnit) },
			format: FormatDuration,
		}
		if o.infinity {
			k.suffix = "or infinity " + k.suffix
			k.typSuffix = "or `infinity` " + k.typSuffix
			k.parse = func(s string) (time.Duration, error) {
				if strings.EqualFold(strings.TrimSpace(s), "infinity") {
					return Infinite, nil
				}
				return ParseDuration(s, defaultUnit)
			}
			k.format = func(d time.Duration) string {
				if d == Infinite {
					return "infinity"
				}
				return FormatDuration(d)
			}
		}
		return k
	})
}

// Enum registers a string entry limited to allowed values, matched
// case-insensitively; Get returns the spelling in allowed.
func Enum(key, def string, allowed []string, doc string, opts ...Option) *Entry[string] {
	allowed = slices.Clone(allowed)
	list := strings.Join(allowed, ", ")
	return register(key, doc, def, opts, func(*options) kind[string] {
		return kind[string]{
			noun: "one of " + list, typ: "one of " + list,
			parse: func(s string) (string, error) {
				t := strings.TrimSpace(s)
				for _, a := range allowed {
					if strings.EqualFold(t, a) {
						return a, nil
					}
				}
				return "", errSyntax
			},
			format: func(s string) string { return s },
		}
	})
}

func unitName(u int64) string {
	switch u {
	case B:
		return "bytes"
	case KiB:
		return "KiB"
	case MiB:
		return "MiB"
	case GiB:
		return "GiB"
	case TiB:
		return "TiB"
	case PiB:
		return "PiB"
	}
	panic(fmt.Sprintf("config: invalid size unit %d", u))
}

func durationUnitName(u time.Duration) string {
	switch u {
	case time.Microsecond:
		return "microseconds"
	case time.Millisecond:
		return "milliseconds"
	case time.Second:
		return "seconds"
	case time.Minute:
		return "minutes"
	case time.Hour:
		return "hours"
	case 24 * time.Hour:
		return "days"
	}
	panic(fmt.Sprintf("config: invalid duration unit %v", u))
}

// kind is how one type of entry parses, formats and describes values.
type kind[T any] struct {
	noun, suffix   string
	typ, typSuffix string
	parse          func(string) (T, error)
	format         func(T) string
}

// register builds an entry, checks its options and default, and adds it to
// the registry. It panics on programming errors: a duplicate key, an option
// of the wrong type, an invalid default.
func register[T any](key, doc, def string, opts []Option, mk func(*options) kind[T]) *Entry[T] {
	return registerDefault(key, doc, def, false, opts, mk)
}

// registerDefault is register; canonical shows the default as the entry
// formats it (for defaults given as typed values, such as math.MaxInt32 →
// "infinity").
func registerDefault[T any](key, doc, def string, canonical bool, opts []Option, mk func(*options) kind[T]) *Entry[T] {
	e := &Entry[T]{meta: meta{key: key, doc: doc}}
	for _, o := range opts {
		o.apply(&e.opts)
	}
	k := mk(&e.opts)
	e.noun, e.suffix, e.typ, e.typSuffix = k.noun, k.suffix, k.typ, k.typSuffix
	e.parse, e.format = k.parse, k.format
	for _, c := range e.opts.checks {
		tc, ok := c.(check[T])
		if !ok {
			panic(fmt.Sprintf("config: %s: validator %T does not apply to %T values", key, c, e.def))
		}
		e.checks = append(e.checks, tc)
	}
	if e.opts.fallback != nil {
		f, ok := e.opts.fallback.(*Entry[T])
		if !ok || f == nil {
			panic(fmt.Sprintf("config: %s: fallback %T is not a registered *Entry[%T]", key, e.opts.fallback, e.def))
		}
		e.fallback = f
	}
	if !e.opts.optional && e.fallback == nil && e.opts.defaultFunc == nil {
		v, err := e.parseChecked(def)
		if err != nil {
			panic(fmt.Sprintf("config: %s: invalid default: %v", key, err))
		}
		e.def, e.defString, e.hasDefault = v, def, true
		if canonical {
			e.defString = e.format(v)
		}
	}
	registerEntry(e)
	return e
}

// The registry.

// registered is what the registry needs of an Entry[T].
type registered interface {
	metadata() *meta
	validate(value string) error
	defaultString(c *Conf) string
	defaultDoc() string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]registered{}
	prefixes   = map[string]*PrefixEntry{}
	relations  []func(*Conf) error
)

func registerEntry(e registered) {
	key := e.metadata().key
	if !strings.HasPrefix(key, "spark.") && !strings.HasPrefix(key, "drover.") {
		panic(fmt.Sprintf("config: %s: keys must start with spark. or drover.", key))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("config: %s registered twice", key))
	}
	registry[key] = e
}

func lookupEntry(key string) (registered, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	e, ok := registry[key]
	return e, ok
}

// known reports whether key has an entry or belongs to a registered prefix
// family.
func known(key string) bool {
	if _, ok := lookupEntry(key); ok {
		return true
	}
	return prefixFor(key) != nil
}

func prefixFor(key string) *PrefixEntry {
	registryMu.RLock()
	defer registryMu.RUnlock()
	for p, e := range prefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return e
		}
	}
	return nil
}

func registeredKeys() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

// Relation registers a rule that relates several keys, such as
// minExecutors ≤ maxExecutors. Validate runs the rules once every set key is
// valid on its own; a rule returns nil or an error that names the keys and
// their values.
func Relation(rule func(c *Conf) error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	relations = append(relations, rule)
}

func allRelations() []func(*Conf) error {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(relations)
}

// PrefixEntry is a family of keys that share a prefix and carry free-form
// names, such as spark.executorEnv.<NAME>. Keys of a registered family are
// known keys.
type PrefixEntry struct {
	prefix, name, doc string
}

// Prefix registers a family of keys: prefix ends with a dot, and name is
// how the docs show the free part, such as "NAME".
func Prefix(prefix, name, doc string) *PrefixEntry {
	if !strings.HasSuffix(prefix, ".") || (!strings.HasPrefix(prefix, "spark.") && !strings.HasPrefix(prefix, "drover.")) {
		panic(fmt.Sprintf("config: prefix %s must start with spark. or drover. and end with a dot", prefix))
	}
	p := &PrefixEntry{prefix: prefix, name: name, doc: doc}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := prefixes[prefix]; dup {
		panic(fmt.Sprintf("config: prefix %s registered twice", prefix))
	}
	prefixes[prefix] = p
	return p
}

// Prefix returns the family's prefix, such as "spark.executorEnv.".
func (p *PrefixEntry) Prefix() string { return p.prefix }

// Doc returns the family's documentation.
func (p *PrefixEntry) Doc() string { return p.doc }

// Values returns the family's keys set in c, without the prefix.
func (p *PrefixEntry) Values(c *Conf) map[string]string {
	out := map[string]string{}
	for k, v := range c.Explicit() {
		if name, ok := strings.CutPrefix(k, p.prefix); ok && name != "" {
			out[name] = v
		}
	}
	return out
}
