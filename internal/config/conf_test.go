package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfSetLookupUnset(t *testing.T) {
	c := New().Set("spark.a", "1").Set("spark.b", "2").Unset("spark.a")
	if v, ok := c.Lookup("spark.a"); ok {
		t.Errorf("Lookup(spark.a) = %q after Unset", v)
	}
	if v, ok := c.Lookup("spark.b"); !ok || v != "2" {
		t.Errorf("Lookup(spark.b) = %q, %t; want 2, true", v, ok)
	}
	explicit := c.Explicit()
	explicit["spark.c"] = "3"
	if _, ok := c.Lookup("spark.c"); ok {
		t.Error("changing the map returned by Explicit changed the configuration")
	}
}

func TestConfZeroAndNil(t *testing.T) {
	var zero Conf
	zero.Set("spark.a", "1")
	if v, _ := zero.Lookup("spark.a"); v != "1" {
		t.Errorf("zero Conf: Lookup = %q, want 1", v)
	}
	var nilConf *Conf
	if _, ok := nilConf.Lookup("spark.a"); ok {
		t.Error("nil Conf has a value")
	}
	if got := nilConf.Get("spark.executor.cores"); got != "1" {
		t.Errorf("nil Conf: Get(spark.executor.cores) = %q, want the default 1", got)
	}
	if diff := cmp.Diff(map[string]string{}, nilConf.Explicit()); diff != "" {
		t.Errorf("nil Conf: Explicit (-want,+got):\n%s", diff)
	}
	if err := nilConf.Validate(); err != nil {
		t.Errorf("nil Conf: Validate = %v", err)
	}
	if c := nilConf.Clone().Set("spark.a", "1"); c.Get("spark.a") != "1" {
		t.Error("Clone of a nil Conf is not usable")
	}
}

func TestConfCloneIsIndependent(t *testing.T) {
	orig := New().Set("spark.a", "1")
	clone := orig.Clone()
	clone.Set("spark.a", "2").Set("spark.b", "clone")
	orig.Set("spark.c", "orig")
	clone2 := orig.Clone()
	orig.Unset("spark.a")

	testCases := map[string]struct {
		conf *Conf
		want map[string]string
	}{
		"original":     {orig, map[string]string{"spark.c": "orig"}},
		"clone":        {clone, map[string]string{"spark.a": "2", "spark.b": "clone"}},
		"second clone": {clone2, map[string]string{"spark.a": "1", "spark.c": "orig"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.conf.Explicit()); diff != "" {
				t.Errorf("Explicit (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestConfConcurrentUse is for the race detector.
func TestConfConcurrentUse(t *testing.T) {
	c := New().Set("spark.executor.cores", "2")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				key := fmt.Sprintf("spark.k%d", j%5)
				switch j % 4 {
				case 0:
					c.Set(key, fmt.Sprint(i))
				case 1:
					_ = ExecutorCores.Get(c)
				case 2:
					d := c.Clone()
					d.Set(key, "clone")
					_ = d.Explicit()
				case 3:
					_ = c.Redacted()
					_ = c.Validate()
				}
			}
		})
	}
	wg.Wait()
	if got := ExecutorCores.Get(c); got != 2 {
		t.Errorf("spark.executor.cores = %d, want 2", got)
	}
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	c := New().
		Set("spark.executor.memory", "4gg").
		Set("spark.executor.instances", "abc").
		Set("spark.submit.deployMode", "server").
		Set("spark.driver.port", "-1").
		Set("spark.unknown.key", "not checked").
		Set("spark.executor.cores", "4")
	want := []string{
		`invalid value "-1" for spark.driver.port: expected an integer between 0 and 65535`,
		`invalid value "abc" for spark.executor.instances: expected an integer ≥ 0`,
		`invalid value "4gg" for spark.executor.memory: expected a size such as 512m or 4g (bare numbers are MiB)`,
		`invalid value "server" for spark.submit.deployMode: expected one of client, cluster`,
	}
	if diff := cmp.Diff(want, errorList(c.Validate())); diff != "" {
		t.Errorf("Validate (-want,+got):\n%s", diff)
	}
}

func TestRedacted(t *testing.T) {
	testCases := map[string]struct {
		conf *Conf
		want map[string]string
	}{
		"default pattern": {
			conf: New().
				Set("spark.authenticate.secret", "s3cr3t").
				Set("spark.kubernetes.authenticate.submission.oauthToken", "abc").
				Set("spark.ssl.keyPassword", "pw").
				Set("spark.hadoop.fs.s3a.access.key", "AKIA").
				Set("spark.app.name", "tokenizer"). // values are matched too, as in Spark
				Set("spark.executor.memory", "4g"),
			want: map[string]string{
				"spark.authenticate.secret":                           RedactedValue,
				"spark.kubernetes.authenticate.submission.oauthToken": RedactedValue,
				"spark.ssl.keyPassword":                               RedactedValue,
				"spark.hadoop.fs.s3a.access.key":                      RedactedValue,
				"spark.app.name":                                      RedactedValue,
				"spark.executor.memory":                               "4g",
			},
		},
		"custom pattern; secret entries stay redacted": {
			conf: New().
				Set("spark.redaction.regex", "memory").
				Set("spark.authenticate.secret", "s3cr3t").
				Set("spark.ssl.keyPassword", "pw").
				Set("spark.executor.memory", "4g"),
			want: map[string]string{
				"spark.redaction.regex":     RedactedValue, // its value matches itself, as in Spark
				"spark.authenticate.secret": RedactedValue,
				"spark.ssl.keyPassword":     "pw",
				"spark.executor.memory":     RedactedValue,
			},
		},
		"invalid pattern falls back to the default": {
			conf: New().Set("spark.redaction.regex", "(").Set("spark.ssl.keyPassword", "pw"),
			want: map[string]string{"spark.redaction.regex": "(", "spark.ssl.keyPassword": RedactedValue},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.conf.Redacted()); diff != "" {
				t.Errorf("Redacted (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	c := New().Set("spark.authenticate.secret", "s3cr3t").Set("spark.master", "local")
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("configuration", "conf", c)
	for name, out := range map[string]string{
		"String":   c.String(),
		"Sprint":   fmt.Sprint(c),
		"LogValue": logged.String(),
		"Markdown": Markdown(),
	} {
		if strings.Contains(out, "s3cr3t") {
			t.Errorf("%s shows the secret: %s", name, out)
		}
	}
	if want := "spark.authenticate.secret=" + RedactedValue + "\nspark.master=local\n"; c.String() != want {
		t.Errorf("String() = %q, want %q", c.String(), want)
	}
	if !strings.Contains(logged.String(), "conf.spark.master=local") {
		t.Errorf("log output %q does not group the values under conf", logged.String())
	}
}
