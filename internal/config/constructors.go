package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
			k = withInfinity(k, math.MaxInt32)
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
			k = withInfinity(k, Infinite)
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

// withInfinity makes k accept "infinity" (case-insensitive) as inf, which
// it formats back as "infinity": the [Infinity] option of Int and Duration
// entries.
func withInfinity[T comparable](k kind[T], inf T) kind[T] {
	// Both suffixes start with the alternative, before any note on units.
	k.suffix = strings.TrimSpace("or infinity " + k.suffix)
	k.typSuffix = strings.TrimSpace("or `infinity` " + k.typSuffix)
	parse, format := k.parse, k.format
	k.parse = func(s string) (T, error) {
		if strings.EqualFold(strings.TrimSpace(s), "infinity") {
			return inf, nil
		}
		return parse(s)
	}
	k.format = func(v T) string {
		if v == inf {
			return "infinity"
		}
		return format(v)
	}
	return k
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
