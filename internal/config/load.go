package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drover-project/drover/internal/envvar"
)

// DefaultsFile is the properties file Load reads from $DROVER_CONF_DIR or
// $SPARK_CONF_DIR when no file is given, as spark-submit does.
const DefaultsFile = "spark-defaults.conf"

// Sources are the places Load reads configuration from. From lowest to
// highest precedence: the registered defaults, PropertiesFile, the
// environment variables of entries that have one, Pairs in order, then
// Overrides.
type Sources struct {
	// PropertiesFile is a file in spark-defaults.conf format (see
	// parseProperties). "" means $DROVER_CONF_DIR/spark-defaults.conf, else
	// $SPARK_CONF_DIR/spark-defaults.conf, if the variable is set and the
	// file exists.
	PropertiesFile string
	// SecretsFile, when set and present, is a second properties file read
	// right after PropertiesFile: a cluster-mode driver's sensitive
	// settings, which drover submit puts in a Secret instead of the config
	// map. Its values never appear in messages.
	SecretsFile string
	// Pairs are "key=value" arguments (--conf), applied in order.
	Pairs []string
	// Overrides are explicit flags such as --master and --name.
	Overrides map[string]string
	// Env reads environment variables; nil means os.Getenv.
	Env func(string) string
}

// Load builds a configuration from src and validates it.
//
// Keys are treated like spark-submit treats them: an unknown spark.* key is
// kept with a warning that suggests the closest registered key; an unknown
// drover.* key is an error (*UnknownKeyError), since drover owns that
// namespace; any other key is dropped with a warning. Every problem (a
// missing properties file, a malformed pair (*PairError), an invalid value
// (*ValueError), an unknown drover.* key) is reported, joined in one error;
// then conf is nil.
func Load(src Sources) (conf *Conf, warnings []string, err error) {
	getenv := src.Env
	if getenv == nil {
		getenv = os.Getenv
	}
	l := &loader{conf: New(), sources: map[string]string{}, reported: map[string]bool{}}

	path := src.PropertiesFile
	if path == "" {
		path = defaultsFile(getenv)
	}
	if path != "" {
		props, err := readProperties(path)
		if err != nil {
			l.errs = append(l.errs, err)
		}
		for _, p := range props {
			l.set(p.key, p.value, fmt.Sprintf("properties file %s:%d", path, p.line))
		}
	}

	if src.SecretsFile != "" {
		props, err := readProperties(src.SecretsFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			l.errs = append(l.errs, err)
		default:
			for _, p := range props {
				l.set(p.key, p.value, fmt.Sprintf("secrets file %s:%d", src.SecretsFile, p.line))
			}
		}
	}

	for _, key := range registeredKeys() {
		e, _ := lookupEntry(key)
		for _, name := range e.metadata().opts.env {
			if v := getenv(name); v != "" {
				l.set(key, v, "environment variable "+name)
				break
			}
		}
	}

	for _, p := range src.Pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			l.errs = append(l.errs, &PairError{Pair: p})
			continue
		}
		l.set(k, v, "")
	}

	for _, k := range slices.Sorted(maps.Keys(src.Overrides)) {
		// A flag such as --master wins over the same key in --conf or a
		// properties file, as with spark-submit; a different value there
		// is likely a mistake, so it is named.
		if old, ok := l.conf.Lookup(k); ok && old != src.Overrides[k] {
			from := l.sources[k]
			if from == "" {
				from = "--conf"
			}
			newV, oldV := src.Overrides[k], old
			if re := redactionRegexp(l.conf); redact(re, k, newV) || redact(re, k, oldV) {
				newV, oldV = RedactedValue, RedactedValue
			}
			l.warnings = append(l.warnings, fmt.Sprintf("the command-line flag's %s=%s replaces %s=%s from %s", k, newV, k, oldV, from))
		}
		l.set(k, src.Overrides[k], "")
	}

	if err := l.conf.validate(func(key string) string { return l.sources[key] }); err != nil {
		l.errs = append(l.errs, err)
	}
	if len(l.errs) > 0 {
		return nil, l.warnings, Invalid(errors.Join(l.errs...))
	}
	return l.conf, l.warnings, nil
}

type loader struct {
	conf     *Conf
	sources  map[string]string // key → where its current value came from
	reported map[string]bool   // keys already warned about or rejected
	warnings []string
	errs     []error
}

func (l *loader) set(key, value, source string) {
	isSpark, isDrover := strings.HasPrefix(key, "spark."), strings.HasPrefix(key, "drover.")
	switch {
	case !isSpark && !isDrover:
		if !l.reported[key] {
			msg := "ignoring non-drover configuration key " + key
			if source != "" {
				msg += " (from " + source + ")"
			}
			l.warnings = append(l.warnings, msg)
		}
		l.reported[key] = true
		return
	case !known(key):
		first := !l.reported[key]
		l.reported[key] = true
		if isDrover {
			if first {
				l.errs = append(l.errs, &UnknownKeyError{Key: key, Suggestion: Suggest(key), Source: source})
			}
			return
		}
		if first {
			l.warnings = append(l.warnings, unknownKeyMessage(key, Suggest(key), source))
		}
	}
	l.conf.Set(key, value)
	l.sources[key] = source
}

// defaultsFile returns spark-defaults.conf in the configuration directory,
// if the directory is set and the file exists. $DROVER_CONF_DIR wins over
// $SPARK_CONF_DIR.
func defaultsFile(getenv func(string) string) string {
	for _, name := range []string{envvar.ConfDir, envvar.SparkConfDir} {
		dir := getenv(name)
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, DefaultsFile)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
		return ""
	}
	return ""
}

func readProperties(path string) ([]property, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("reading properties file %s: %w", path, err)
	}
	props, err := parseProperties(string(b))
	if err != nil {
		return nil, fmt.Errorf("reading properties file %s: %w", path, err)
	}
	return props, nil
}

// Suggest returns the registered key closest to key when it is close enough
// to be a typo (a few edits, case ignored), else "".
func Suggest(key string) string {
	lk := strings.ToLower(key)
	maxDist := min(3, 1+len(key)/10)
	best, bestDist := "", maxDist+1
	for _, k := range registeredKeys() {
		if d := editDistance(lk, strings.ToLower(k), bestDist); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes each cost 1). Distances of limit or more are reported as limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit)
}
