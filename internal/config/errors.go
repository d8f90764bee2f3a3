package config

import (
	"errors"
	"fmt"
	"strings"
)

// ValueError reports a value that is not valid for a registered key.
type ValueError struct {
	Key   string
	Value string // the value as given; "(redacted)" for secret keys
	// Expected describes the valid values, such as "an integer ≥ 0".
	Expected string
	// Detail, when set, says more precisely what is wrong, such as
	// "fractional values are not supported".
	Detail string
	// Source, when set, names where the value came from when that is not
	// the command line, such as "environment variable MASTER" or
	// "properties file /etc/drover/spark-defaults.conf".
	Source string
}

func (e *ValueError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid value %q for %s", e.Value, e.Key)
	if e.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	fmt.Fprintf(&b, ": expected %s", e.Expected)
	if e.Detail != "" {
		b.WriteString("; ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// UnknownKeyError reports a drover.* key that no entry registers: drover
// owns that namespace, so an unknown key there is a typo, not a setting for
// some other component.
type UnknownKeyError struct {
	Key string
	// Suggestion is the closest registered key, or "" when none is close.
	Suggestion string
	Source     string
}

func (e *UnknownKeyError) Error() string {
	return unknownKeyMessage(e.Key, e.Suggestion, e.Source)
}

func unknownKeyMessage(key, suggestion, source string) string {
	msg := "unknown configuration key " + key
	if source != "" {
		msg += " (from " + source + ")"
	}
	if suggestion != "" {
		msg += " (did you mean " + suggestion + "?)"
	}
	return msg
}

// PairError reports a --conf argument that is not of the form key=value.
type PairError struct {
	Pair string
}

func (e *PairError) Error() string {
	return fmt.Sprintf("--conf %q: expected key=value with a non-empty key", e.Pair)
}

// ErrInvalid is in the chain of every error about input a user gave:
// configuration values, keys and their combinations, flags, the master URL,
// the application resource. drover and application binaries exit with
// ExitInvalid for such errors and 1 for failures at run time.
var ErrInvalid = errors.New("invalid configuration")

// ExitInvalid is the exit code of drover and of application binaries for
// invalid input (ErrInvalid): nothing was created or started.
const ExitInvalid = 2

// Invalid marks err as invalid input, with the prefix "invalid
// configuration: " once: an error already marked is returned as it is.
func Invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalid) {
		return err
	}
	return &invalidError{err}
}

type invalidError struct{ err error }

// Error puts several problems (errors.Join) one per line under the prefix.
func (e *invalidError) Error() string {
	msg := e.err.Error()
	if !strings.Contains(msg, "\n") {
		return ErrInvalid.Error() + ": " + msg
	}
	return ErrInvalid.Error() + ":\n  " + strings.ReplaceAll(msg, "\n", "\n  ")
}

func (e *invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }
