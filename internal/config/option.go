package config

import (
	"cmp"
	"fmt"
)

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
