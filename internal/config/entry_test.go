package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// unregisterAfter removes test-only keys and prefixes from the registry when
// the test ends, so that they do not leak into other tests or the docs.
func unregisterAfter(t *testing.T, keys ...string) {
	t.Helper()
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		for _, k := range keys {
			delete(registry, k)
			delete(prefixes, k)
		}
	})
}

// errorList flattens errors.Join trees into their messages.
func errorList(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			if e == ErrInvalid { // the mark of Invalid, not a problem
				continue
			}
			out = append(out, errorList(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func TestInvalidValues(t *testing.T) {
	testCases := map[string]struct {
		key, value string
		want       string
	}{
		"size with a doubled unit": {
			key: "spark.executor.memory", value: "4gg",
			want: `invalid value "4gg" for spark.executor.memory: expected a size such as 512m or 4g (bare numbers are MiB)`,
		},
		"fractional size": {
			key: "spark.executor.memory", value: "1.5g",
			want: `invalid value "1.5g" for spark.executor.memory: expected a size such as 512m or 4g (bare numbers are MiB); fractional values are not supported`,
		},
		"negative size": {
			key: "spark.driver.maxResultSize", value: "-1",
			want: `invalid value "-1" for spark.driver.maxResultSize: expected a size such as 512m or 4g (bare numbers are bytes); negative values are not allowed`,
		},
		"huge size": {
			key: "spark.executor.memory", value: "99999999999999g",
			want: `invalid value "99999999999999g" for spark.executor.memory: expected a size such as 512m or 4g (bare numbers are MiB); the value is too large`,
		},
		"integer that is not a number": {
			key: "spark.executor.instances", value: "abc",
			want: `invalid value "abc" for spark.executor.instances: expected an integer ≥ 0`,
		},
		"negative integer": {
			key: "spark.executor.instances", value: "-1",
			want: `invalid value "-1" for spark.executor.instances: expected an integer ≥ 0`,
		},
		"fractional integer": {
			key: "spark.executor.cores", value: "1.5",
			want: `invalid value "1.5" for spark.executor.cores: expected an integer ≥ 1`,
		},
		"integer beyond 32 bits": {
			key: "spark.executor.instances", value: "99999999999",
			want: `invalid value "99999999999" for spark.executor.instances: expected an integer ≥ 0; the value is too large`,
		},
		"zero cores": {
			key: "spark.task.cpus", value: "0",
			want: `invalid value "0" for spark.task.cpus: expected an integer ≥ 1`,
		},
		"port out of range": {
			key: "spark.driver.port", value: "70000",
			want: `invalid value "70000" for spark.driver.port: expected an integer between 0 and 65535`,
		},
		"integer or infinity": {
			key: "spark.dynamicAllocation.maxExecutors", value: "lots",
			want: `invalid value "lots" for spark.dynamicAllocation.maxExecutors: expected an integer ≥ 0 or infinity`,
		},
		"boolean": {
			key: "spark.authenticate", value: "yes",
			want: `invalid value "yes" for spark.authenticate: expected true or false`,
		},
		"enum": {
			key: "spark.submit.deployMode", value: "server",
			want: `invalid value "server" for spark.submit.deployMode: expected one of client, cluster`,
		},
		"ratio out of range": {
			key: "spark.scheduler.minRegisteredResourcesRatio", value: "1.5",
			want: `invalid value "1.5" for spark.scheduler.minRegisteredResourcesRatio: expected a number between 0 and 1`,
		},
		"ratio NaN": {
			key: "spark.scheduler.minRegisteredResourcesRatio", value: "NaN",
			want: `invalid value "NaN" for spark.scheduler.minRegisteredResourcesRatio: expected a number between 0 and 1`,
		},
		"custom check": {
			key: "spark.dynamicAllocation.executorAllocationRatio", value: "0",
			want: `invalid value "0" for spark.dynamicAllocation.executorAllocationRatio: expected a number > 0 and ≤ 1`,
		},
		"negative duration": {
			key: "spark.network.timeout", value: "-5s",
			want: `invalid value "-5s" for spark.network.timeout: expected a duration such as 30s, 5m or 2h (bare numbers are seconds); negative values are not allowed`,
		},
		"duration in milliseconds": {
			key: "spark.executor.heartbeatInterval", value: "often",
			want: `invalid value "often" for spark.executor.heartbeatInterval: expected a duration such as 30s, 5m or 2h (bare numbers are milliseconds)`,
		},
		"duration or infinity": {
			key: "spark.dynamicAllocation.cachedExecutorIdleTimeout", value: "forever",
			want: `invalid value "forever" for spark.dynamicAllocation.cachedExecutorIdleTimeout: expected a duration such as 30s, 5m or 2h or infinity (bare numbers are seconds)`,
		},
		"regular expression": {
			key: "spark.redaction.regex", value: "(",
			want: `invalid value "(" for spark.redaction.regex: expected a string that compiles as a regular expression`,
		},
		"log level": {
			key: "drover.log.level", value: "verbose",
			want: `invalid value "verbose" for drover.log.level: expected one of debug, info, warn, error`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			err := New().Set(tc.key, tc.value).Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Validate() (-want,+got):\n%s", diff)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() error is %T, want a *ValueError", err)
			}
			if ve.Key != tc.key || ve.Value != tc.value {
				t.Errorf("ValueError{Key: %q, Value: %q}, want {%q, %q}", ve.Key, ve.Value, tc.key, tc.value)
			}
		})
	}
}

func TestValidValues(t *testing.T) {
	testCases := map[string]struct{ key, value string }{
		"size with b suffix":     {"spark.executor.memory", "4gb"},
		"bare size":              {"spark.executor.memory", "2048"},
		"unlimited result size":  {"spark.driver.maxResultSize", "0"},
		"upper-case boolean":     {"spark.authenticate", "TRUE"},
		"boolean with spaces":    {"spark.authenticate", " false "},
		"upper-case enum":        {"spark.submit.deployMode", "Cluster"},
		"infinity":               {"spark.dynamicAllocation.maxExecutors", "Infinity"},
		"infinite duration":      {"spark.dynamicAllocation.shuffleTracking.timeout", "infinity"},
		"integer with spaces":    {"spark.executor.instances", " 3 "},
		"ratio bound":            {"spark.scheduler.minRegisteredResourcesRatio", "1"},
		"bare duration":          {"spark.network.timeout", "300"},
		"any string":             {"spark.app.name", "my app"},
		"unregistered spark key": {"spark.sql.shuffle.partitions", "whatever"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if err := New().Set(tc.key, tc.value).Validate(); err != nil {
				t.Errorf("Validate() with %s=%q: %v", tc.key, tc.value, err)
			}
		})
	}
}

func TestEntryGet(t *testing.T) {
	conf := func(kv ...string) *Conf {
		c := New()
		for i := 0; i < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	testCases := map[string]struct {
		get  func(*Conf) any
		conf *Conf
		want any
	}{
		"size default": {
			get: func(c *Conf) any { return ExecutorMemory.Get(c) }, conf: New(), want: int64(1 << 30),
		},
		"size set": {
			get:  func(c *Conf) any { return ExecutorMemory.Get(c) },
			conf: conf("spark.executor.memory", "4g"), want: int64(4 << 30),
		},
		"bare size in MiB": {
			get:  func(c *Conf) any { return ExecutorMemory.Get(c) },
			conf: conf("spark.executor.memory", "512"), want: int64(512 << 20),
		},
		"bare size in KiB": {
			get:  func(c *Conf) any { return ReducerMaxSizeInFlight.Get(c) },
			conf: conf("spark.reducer.maxSizeInFlight", "1024"), want: int64(1 << 20),
		},
		"invalid value reads as the default": {
			get:  func(c *Conf) any { return ExecutorMemory.Get(c) },
			conf: conf("spark.executor.memory", "4gg"), want: int64(1 << 30),
		},
		"out-of-range value reads as the default": {
			get:  func(c *Conf) any { return ExecutorInstances.Get(c) },
			conf: conf("spark.executor.instances", "-1"), want: 2,
		},
		"nil conf reads the default": {
			get: func(*Conf) any { return NetworkTimeout.Get(nil) }, want: 120 * time.Second,
		},
		"bare duration in milliseconds": {
			get:  func(c *Conf) any { return ExecutorHeartbeatInterval.Get(c) },
			conf: conf("spark.executor.heartbeatInterval", "500"), want: 500 * time.Millisecond,
		},
		"integer or infinity default": {
			get: func(c *Conf) any { return DynamicAllocationMaxExecutors.Get(c) }, conf: New(), want: math.MaxInt32,
		},
		"integer or infinity set": {
			get:  func(c *Conf) any { return DynamicAllocationMaxExecutors.Get(c) },
			conf: conf("spark.dynamicAllocation.maxExecutors", "10"), want: 10,
		},
		"infinite duration default": {
			get: func(c *Conf) any { return DynamicAllocationCachedExecutorIdleTimeout.Get(c) }, conf: New(), want: Infinite,
		},
		"enum is canonical": {
			get:  func(c *Conf) any { return DeployMode.Get(c) },
			conf: conf("spark.submit.deployMode", "CLUSTER"), want: "cluster",
		},
		"boolean": {
			get:  func(c *Conf) any { return Authenticate.Get(c) },
			conf: conf("spark.authenticate", "True"), want: true,
		},
		"fallback to another key": {
			get:  func(c *Conf) any { return DriverBindAddress.Get(c) },
			conf: conf("spark.driver.host", "10.1.2.3"), want: "10.1.2.3",
		},
		"fallback overridden": {
			get:  func(c *Conf) any { return DriverBindAddress.Get(c) },
			conf: conf("spark.driver.host", "10.1.2.3", "spark.driver.bindAddress", "0.0.0.0"), want: "0.0.0.0",
		},
		"fallback to a default": {
			get: func(c *Conf) any { return DynamicAllocationSustainedSchedulerBacklogTimeout.Get(c) }, conf: New(), want: time.Second,
		},
		"fallback to a set integer": {
			get:  func(c *Conf) any { return DynamicAllocationInitialExecutors.Get(c) },
			conf: conf("spark.dynamicAllocation.minExecutors", "3"), want: 3,
		},
		"optional unset is zero": {
			get: func(c *Conf) any { return ExecutorMemoryOverhead.Get(c) }, conf: New(), want: int64(0),
		},
		"optional set": {
			get:  func(c *Conf) any { return ExecutorMemoryOverhead.Get(c) },
			conf: conf("spark.executor.memoryOverhead", "512"), want: int64(512 << 20),
		},
		"computed default": {
			get: func(c *Conf) any { return AppName.Get(c) }, conf: New(), want: filepath.Base(os.Args[0]),
		},
		"string is not trimmed": {
			get:  func(c *Conf) any { return AppName.Get(c) },
			conf: conf("spark.app.name", " my app "), want: " my app ",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.get(tc.conf)); diff != "" {
				t.Errorf("Get (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEntryIsSetAndLookup(t *testing.T) {
	c := New().Set("spark.executor.memoryOverhead", "1g").Set("spark.executor.instances", "abc")
	if DriverMemoryOverhead.IsSet(c) {
		t.Error("spark.driver.memoryOverhead IsSet, want unset")
	}
	if v, ok := DriverMemoryOverhead.Lookup(c); ok || v != 0 {
		t.Errorf("Lookup(spark.driver.memoryOverhead) = %d, %t; want 0, false", v, ok)
	}
	if !ExecutorMemoryOverhead.IsSet(c) {
		t.Error("spark.executor.memoryOverhead not IsSet")
	}
	if v, ok := ExecutorMemoryOverhead.Lookup(c); !ok || v != 1<<30 {
		t.Errorf("Lookup(spark.executor.memoryOverhead) = %d, %t; want 1GiB, true", v, ok)
	}
	// An invalid value is set but does not look up.
	if !ExecutorInstances.IsSet(c) {
		t.Error("spark.executor.instances=abc not IsSet")
	}
	if _, ok := ExecutorInstances.Lookup(c); ok {
		t.Error("Lookup(spark.executor.instances=abc) ok, want not ok")
	}
}

func TestEntrySetFormats(t *testing.T) {
	c := New()
	ExecutorMemory.Set(c, 3<<30)
	DynamicAllocationMaxExecutors.Set(c, math.MaxInt32)
	DynamicAllocationCachedExecutorIdleTimeout.Set(c, Infinite)
	NetworkTimeout.Set(c, 90*time.Second)
	Authenticate.Set(c, true)
	MinRegisteredResourcesRatio.Set(c, 0.75)
	ExecutorInstances.Set(c, 5)
	want := map[string]string{
		"spark.executor.memory":                             "3g",
		"spark.dynamicAllocation.maxExecutors":              "infinity",
		"spark.dynamicAllocation.cachedExecutorIdleTimeout": "infinity",
		"spark.network.timeout":                             "90s",
		"spark.authenticate":                                "true",
		"spark.scheduler.minRegisteredResourcesRatio":       "0.75",
		"spark.executor.instances":                          "5",
	}
	if diff := cmp.Diff(want, c.Explicit()); diff != "" {
		t.Errorf("Explicit() after Set (-want,+got):\n%s", diff)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() after typed Set: %v", err)
	}
}

func TestConfGetString(t *testing.T) {
	c := New().Set("spark.driver.host", "driver.svc").Set("spark.custom.key", "v")
	testCases := map[string]struct{ key, want string }{
		"explicit":                {"spark.custom.key", "v"},
		"registered default":      {"spark.executor.memory", "1g"},
		"canonical default":       {"spark.dynamicAllocation.maxExecutors", "infinity"},
		"fallback":                {"spark.driver.bindAddress", "driver.svc"},
		"fallback chain default":  {"spark.dynamicAllocation.sustainedSchedulerBacklogTimeout", "1s"},
		"optional":                {"spark.executor.memoryOverhead", ""},
		"unregistered and unset":  {"spark.nothing", ""},
		"computed default":        {"spark.local.dir", os.TempDir()},
		"default of a float":      {"spark.executor.memoryOverheadFactor", "0.1"},
		"default of a boolean":    {"spark.dynamicAllocation.shuffleTracking.enabled", "true"},
		"default of a drover key": {"drover.log.format", "text"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := c.Get(tc.key); got != tc.want {
				t.Errorf("Get(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

func TestLocalDirsAndLogEnv(t *testing.T) {
	testCases := map[string]struct {
		value string
		want  []string
	}{
		"unset":            {want: []string{os.TempDir()}},
		"one":              {value: "/scratch", want: []string{"/scratch"}},
		"several, spaces":  {value: " /a, ,/b ,", want: []string{"/a", "/b"}},
		"only separators":  {value: " , ", want: []string{os.TempDir()}},
		"explicitly empty": {value: "", want: []string{os.TempDir()}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			c := New()
			if tc.value != "" {
				c.Set("spark.local.dir", tc.value)
			}
			if diff := cmp.Diff(tc.want, LocalDirs(c)); diff != "" {
				t.Errorf("LocalDirs (-want,+got):\n%s", diff)
			}
		})
	}
	got := LogEnv(New().Set("drover.log.level", "DEBUG"))
	if diff := cmp.Diff([]string{"DROVER_LOG_LEVEL=debug", "DROVER_LOG_FORMAT=text"}, got); diff != "" {
		t.Errorf("LogEnv (-want,+got):\n%s", diff)
	}
}

func TestRegistrationPanics(t *testing.T) {
	testCases := map[string]struct {
		register func()
		want     string
	}{
		"duplicate key": {
			register: func() { String("spark.master", "", "again") },
			want:     "config: spark.master registered twice",
		},
		"validator of another type": {
			register: func() { Int("spark.test.wrongCheck", 1, "doc", AtLeast(int64(0))) },
			want:     "config: spark.test.wrongCheck: validator config.check[int64] does not apply to int values",
		},
		"fallback of another type": {
			register: func() { Int("spark.test.wrongFallback", 1, "doc", FallbackTo(DriverHost)) },
			want:     "config: spark.test.wrongFallback: fallback *config.Entry[string] is not a registered *Entry[int]",
		},
		"invalid default": {
			register: func() { Bytes("spark.test.badDefault", "4gg", MiB, "doc") },
			want:     `config: spark.test.badDefault: invalid default: invalid value "4gg" for spark.test.badDefault: expected a size such as 512m or 4g (bare numbers are MiB)`,
		},
		"default outside the checks": {
			register: func() { Int("spark.test.badRange", 0, "doc", AtLeast(1)) },
			want:     `config: spark.test.badRange: invalid default: invalid value "0" for spark.test.badRange: expected an integer ≥ 1`,
		},
		"foreign namespace": {
			register: func() { String("hadoop.test", "", "doc") },
			want:     "config: hadoop.test: keys must start with spark. or drover.",
		},
		"prefix without a dot": {
			register: func() { Prefix("spark.test", "NAME", "doc") },
			want:     "config: prefix spark.test must start with spark. or drover. and end with a dot",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if diff := cmp.Diff(tc.want, msg); r == nil || diff != "" {
					t.Errorf("panic = %v, want %q", r, tc.want)
				}
				if known("spark.test.badRange") || known("spark.test.wrongCheck") {
					t.Error("a failed registration left its key in the registry")
				}
			}()
			tc.register()
		})
	}
}

func TestSecretValuesStayHidden(t *testing.T) {
	pin := String("spark.test.pin", "0000", "A secret with a format.", Secret(),
		Check("of four digits", func(s string) bool { return len(s) == 4 && strings.Trim(s, "0123456789") == "" }))
	unregisterAfter(t, pin.Key())

	err := New().Set(pin.Key(), "hunter2").Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Validate() = %v, want an error without the secret value", err)
	}
	if want := `invalid value "*********(redacted)" for spark.test.pin: expected a string of four digits`; err.Error() != want {
		t.Errorf("Validate() = %q, want %q", err, want)
	}
}

func TestPrefixFamily(t *testing.T) {
	labels := Prefix("spark.test.label.", "NAME", "Labels added to test objects.")
	unregisterAfter(t, labels.Prefix())

	conf, warnings, err := Load(Sources{
		Pairs: []string{"spark.test.label.team=data", "spark.test.label.tier=batch", "spark.test.label.=x"},
		Env:   mapEnv(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"unknown configuration key spark.test.label."}, warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "data", "tier": "batch"}, labels.Values(conf)); diff != "" {
		t.Errorf("Values (-want,+got):\n%s", diff)
	}
	if !strings.Contains(Markdown(), "| `spark.test.label.<NAME>` | (none) | string | Labels added to test objects. |") {
		t.Error("Markdown() does not list the key family")
	}
}
