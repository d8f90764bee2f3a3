package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mapEnv is an environment with exactly the given variables.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeFile writes a properties file in a fresh directory and returns its
// path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "app.conf", `
spark.app.name          from-file
spark.master            local[1]
spark.local.dir         /file
spark.driver.host       file.example
spark.executor.cores    1
`)
	conf, warnings, err := Load(Sources{
		PropertiesFile: file,
		Env: mapEnv(map[string]string{
			"MASTER":           "local[2]",
			"SPARK_LOCAL_DIRS": "/env",
			"SPARK_LOCAL_IP":   "10.0.0.9",
			"DROVER_LOG_LEVEL": "", // empty variables are ignored
		}),
		Pairs: []string{
			"spark.local.dir=/conf",
			"spark.driver.host=conf.example",
			"spark.executor.cores=2",
			"spark.executor.cores=3", // later pairs win
		},
		Overrides: map[string]string{"spark.driver.host": "flag.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The flag wins, and the value it replaces is named.
	if diff := cmp.Diff([]string{"the command-line flag's spark.driver.host=flag.example replaces spark.driver.host=conf.example from --conf"}, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"spark.app.name":       "from-file",    // file only
		"spark.master":         "local[2]",     // environment over file
		"spark.local.dir":      "/conf",        // --conf over environment
		"spark.driver.host":    "flag.example", // flags over --conf
		"spark.executor.cores": "3",            // the last --conf
	}
	if diff := cmp.Diff(want, conf.Explicit()); diff != "" {
		t.Errorf("Explicit() (-want,+got):\n%s", diff)
	}
	// Defaults are below everything and are not explicit.
	if got := ExecutorMemory.Get(conf); got != 1<<30 {
		t.Errorf("spark.executor.memory = %d, want the default 1g", got)
	}
}

func TestLoadDefaultsFileFromConfDir(t *testing.T) {
	droverDir, sparkDir, emptyDir := t.TempDir(), t.TempDir(), t.TempDir()
	for dir, name := range map[string]string{droverDir: "from-drover-dir", sparkDir: "from-spark-dir"} {
		if err := os.WriteFile(filepath.Join(dir, DefaultsFile), []byte("spark.app.name "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	explicit := writeFile(t, "explicit.conf", "spark.app.name=from-explicit-file\n")
	testCases := map[string]struct {
		file string
		env  map[string]string
		want string // spark.app.name; "" = not set
	}{
		"DROVER_CONF_DIR":                  {env: map[string]string{"DROVER_CONF_DIR": droverDir}, want: "from-drover-dir"},
		"SPARK_CONF_DIR":                   {env: map[string]string{"SPARK_CONF_DIR": sparkDir}, want: "from-spark-dir"},
		"DROVER_CONF_DIR wins":             {env: map[string]string{"DROVER_CONF_DIR": droverDir, "SPARK_CONF_DIR": sparkDir}, want: "from-drover-dir"},
		"directory without the file":       {env: map[string]string{"SPARK_CONF_DIR": emptyDir}},
		"directory that does not exist":    {env: map[string]string{"SPARK_CONF_DIR": filepath.Join(emptyDir, "nope")}},
		"an explicit file wins":            {file: explicit, env: map[string]string{"DROVER_CONF_DIR": droverDir}, want: "from-explicit-file"},
		"no file and no configuration dir": {},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			conf, _, err := Load(Sources{PropertiesFile: tc.file, Env: mapEnv(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := conf.Lookup("spark.app.name")
			if got != tc.want {
				t.Errorf("spark.app.name = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadEnvironmentDefaultsToOS(t *testing.T) {
	// Clear what the machine running the test may have set.
	for _, key := range registeredKeys() {
		e, _ := lookupEntry(key)
		for _, name := range e.metadata().opts.env {
			t.Setenv(name, "")
		}
	}
	t.Setenv("MASTER", "local[3]")
	t.Setenv("DROVER_CONF_DIR", t.TempDir())
	conf, _, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if got := Master.Get(conf); got != "local[3]" {
		t.Errorf("spark.master = %q, want local[3] from $MASTER", got)
	}
}

func TestLoadEnvironmentVariables(t *testing.T) {
	conf, _, err := Load(Sources{Env: mapEnv(map[string]string{
		"MASTER":             "k8s://https://10.0.0.1:6443",
		"SPARK_LOCAL_DIRS":   "/a,/b",
		"SPARK_LOCAL_IP":     "10.0.0.7",
		"_SPARK_AUTH_SECRET": "s3cr3t",
		"DROVER_LOG_LEVEL":   "debug",
		"DROVER_LOG_FORMAT":  "json",
	})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"spark.master":              "k8s://https://10.0.0.1:6443",
		"spark.local.dir":           "/a,/b",
		"spark.driver.host":         "10.0.0.7",
		"spark.authenticate.secret": "s3cr3t",
		"drover.log.level":          "debug",
		"drover.log.format":         "json",
	}
	if diff := cmp.Diff(want, conf.Explicit()); diff != "" {
		t.Errorf("Explicit() (-want,+got):\n%s", diff)
	}
	if got := DriverBindAddress.Get(conf); got != "10.0.0.7" {
		t.Errorf("spark.driver.bindAddress = %q, want SPARK_LOCAL_IP through spark.driver.host", got)
	}
}

func TestLoadKeys(t *testing.T) {
	testCases := map[string]struct {
		pairs        []string
		file         string
		wantExplicit map[string]string
		wantWarnings []string
		wantErrs     []string
	}{
		"unknown spark key warns with a suggestion and is kept": {
			pairs:        []string{"spark.executor.memroy=4g"},
			wantExplicit: map[string]string{"spark.executor.memroy": "4g"},
			wantWarnings: []string{"unknown configuration key spark.executor.memroy (did you mean spark.executor.memory?)"},
		},
		"unknown spark key that differs in case": {
			pairs:        []string{"spark.executor.Memory=4g"},
			wantExplicit: map[string]string{"spark.executor.Memory": "4g"},
			wantWarnings: []string{"unknown configuration key spark.executor.Memory (did you mean spark.executor.memory?)"},
		},
		"unknown spark key without a close match": {
			pairs:        []string{"spark.sql.shuffle.partitions=8"},
			wantExplicit: map[string]string{"spark.sql.shuffle.partitions": "8"},
			wantWarnings: []string{"unknown configuration key spark.sql.shuffle.partitions"},
		},
		"unknown spark key is reported once": {
			pairs:        []string{"spark.executor.memroy=4g", "spark.executor.memroy=8g"},
			wantExplicit: map[string]string{"spark.executor.memroy": "8g"},
			wantWarnings: []string{"unknown configuration key spark.executor.memroy (did you mean spark.executor.memory?)"},
		},
		"unknown drover key is an error with a suggestion": {
			pairs:    []string{"drover.log.levl=debug"},
			wantErrs: []string{"unknown configuration key drover.log.levl (did you mean drover.log.level?)"},
		},
		"unknown drover key without a close match": {
			pairs:    []string{"drover.frobnicate=1"},
			wantErrs: []string{"unknown configuration key drover.frobnicate"},
		},
		"non-drover keys are ignored with a warning": {
			pairs:        []string{"hadoop.fs.defaultFS=hdfs://x", "foo=bar", "foo=baz"},
			wantExplicit: map[string]string{},
			wantWarnings: []string{"ignoring non-drover configuration key hadoop.fs.defaultFS", "ignoring non-drover configuration key foo"},
		},
		"pair with an empty key": {
			pairs:    []string{"=3"},
			wantErrs: []string{`--conf "=3": expected key=value with a non-empty key`},
		},
		"pair with a blank key": {
			pairs:    []string{"  =3"},
			wantErrs: []string{`--conf "  =3": expected key=value with a non-empty key`},
		},
		"pair without =": {
			pairs:    []string{"spark.executor.cores"},
			wantErrs: []string{`--conf "spark.executor.cores": expected key=value with a non-empty key`},
		},
		"empty pair": {
			pairs:    []string{""},
			wantErrs: []string{`--conf "": expected key=value with a non-empty key`},
		},
		"value may contain = and be empty": {
			pairs:        []string{"spark.app.name=a=b", "spark.driver.host="},
			wantExplicit: map[string]string{"spark.app.name": "a=b", "spark.driver.host": ""},
		},
		"key is trimmed, value is kept": {
			pairs:        []string{" spark.app.name = my app"},
			wantExplicit: map[string]string{"spark.app.name": " my app"},
		},
		"invalid integer": {
			pairs:    []string{"spark.executor.instances=abc"},
			wantErrs: []string{`invalid value "abc" for spark.executor.instances: expected an integer ≥ 0`},
		},
		"negative integer": {
			pairs:    []string{"spark.executor.instances=-1"},
			wantErrs: []string{`invalid value "-1" for spark.executor.instances: expected an integer ≥ 0`},
		},
		"invalid value overridden by a valid one": {
			pairs:        []string{"spark.executor.instances=abc", "spark.executor.instances=4"},
			wantExplicit: map[string]string{"spark.executor.instances": "4"},
		},
		"invalid value from the properties file names the file": {
			file:     "spark.app.name x\nspark.executor.memory 4gg\n",
			wantErrs: []string{`invalid value "4gg" for spark.executor.memory (from properties file FILE:2): expected a size such as 512m or 4g (bare numbers are MiB)`},
		},
		"unknown key from the properties file names the file": {
			file:         "# comment\nspark.executor.memroy 4g\n",
			wantExplicit: map[string]string{"spark.executor.memroy": "4g"},
			wantWarnings: []string{"unknown configuration key spark.executor.memroy (from properties file FILE:2) (did you mean spark.executor.memory?)"},
		},
		"every problem is reported": {
			pairs: []string{"=3", "drover.log.levl=debug", "spark.executor.instances=abc", "spark.executor.memory=4gg", "x=y"},
			wantErrs: []string{
				`--conf "=3": expected key=value with a non-empty key`,
				"unknown configuration key drover.log.levl (did you mean drover.log.level?)",
				`invalid value "abc" for spark.executor.instances: expected an integer ≥ 0`,
				`invalid value "4gg" for spark.executor.memory: expected a size such as 512m or 4g (bare numbers are MiB)`,
			},
			wantWarnings: []string{"ignoring non-drover configuration key x"},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			src := Sources{Pairs: tc.pairs, Env: mapEnv(nil)}
			if tc.file != "" {
				src.PropertiesFile = writeFile(t, "spark-defaults.conf", tc.file)
			}
			conf, warnings, err := Load(src)
			replaceFile := func(s []string) []string {
				for i := range s {
					if src.PropertiesFile != "" {
						s[i] = strings.ReplaceAll(s[i], src.PropertiesFile, "FILE")
					}
				}
				return s
			}
			if diff := cmp.Diff(tc.wantWarnings, replaceFile(warnings)); diff != "" {
				t.Errorf("warnings (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrs, replaceFile(errorList(err))); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
			if tc.wantErrs != nil {
				if conf != nil {
					t.Errorf("Load returned a configuration with an error")
				}
				return
			}
			if diff := cmp.Diff(tc.wantExplicit, conf.Explicit()); diff != "" {
				t.Errorf("Explicit() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLoadErrorTypes(t *testing.T) {
	_, _, err := Load(Sources{
		Pairs: []string{"nokey", "drover.log.levl=x", "spark.executor.cores=zero"},
		Env:   mapEnv(nil),
	})
	var pe *PairError
	if !errors.As(err, &pe) || pe.Pair != "nokey" {
		t.Errorf("error %v does not unwrap to the *PairError", err)
	}
	var ue *UnknownKeyError
	if !errors.As(err, &ue) || ue.Key != "drover.log.levl" || ue.Suggestion != "drover.log.level" {
		t.Errorf("error %v does not unwrap to the *UnknownKeyError", err)
	}
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Key != "spark.executor.cores" || ve.Expected != "an integer ≥ 1" {
		t.Errorf("error %v does not unwrap to the *ValueError", err)
	}
}

func TestLoadPropertiesFileNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.conf")
	_, _, err := Load(Sources{PropertiesFile: missing, Env: mapEnv(nil)})
	if err == nil {
		t.Fatal("Load with a missing properties file succeeded")
	}
	if want := "invalid configuration: reading properties file " + missing + ": no such file or directory"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
}

func TestLoadPropertiesFileIsADirectory(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Load(Sources{PropertiesFile: dir, Env: mapEnv(nil)})
	if err == nil || !strings.Contains(err.Error(), "reading properties file "+dir) {
		t.Errorf("error = %v, want one naming %s", err, dir)
	}
}

func TestLoadValidatesRelations(t *testing.T) {
	testCases := map[string]struct {
		pairs   []string
		wantErr string
	}{
		"heartbeat as long as the timeout": {
			pairs:   []string{"spark.network.timeout=10s", "spark.executor.heartbeatInterval=10000"},
			wantErr: "invalid configuration: spark.network.timeout=10s must be greater than spark.executor.heartbeatInterval=10000",
		},
		"min above max with dynamic allocation": {
			pairs:   []string{"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.minExecutors=5", "spark.dynamicAllocation.maxExecutors=2"},
			wantErr: "invalid configuration: dynamic allocation: spark.dynamicAllocation.minExecutors=5 must be ≤ spark.dynamicAllocation.maxExecutors=2",
		},
		"zero max and zero backlog timeout with dynamic allocation": {
			pairs: []string{"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.maxExecutors=0", "spark.dynamicAllocation.schedulerBacklogTimeout=0"},
			wantErr: "invalid configuration: dynamic allocation: spark.dynamicAllocation.maxExecutors must be ≥ 1; " +
				"spark.dynamicAllocation.schedulerBacklogTimeout must be > 0; spark.dynamicAllocation.sustainedSchedulerBacklogTimeout must be > 0",
		},
		"min above max without dynamic allocation is not checked": {
			pairs: []string{"spark.dynamicAllocation.minExecutors=5", "spark.dynamicAllocation.maxExecutors=2"},
		},
		"infinite max": {
			pairs: []string{"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.minExecutors=500"},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			_, _, err := Load(Sources{Pairs: tc.pairs, Env: mapEnv(nil)})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	testCases := map[string]struct{ key, want string }{
		"transposition":      {"spark.executor.memroy", "spark.executor.memory"},
		"missing letter":     {"spark.executor.instaces", "spark.executor.instances"},
		"plural":             {"spark.executors.cores", "spark.executor.cores"},
		"case":               {"SPARK.MASTER", "spark.master"},
		"extra dot":          {"spark.executor.memory.overhead", "spark.executor.memoryOverhead"},
		"short drover key":   {"drover.log.levl", "drover.log.level"},
		"far from any key":   {"spark.sql.adaptive.enabled", ""},
		"different word":     {"spark.executor.disk", ""},
		"exact key is found": {"spark.task.cpus", "spark.task.cpus"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := Suggest(tc.key); got != tc.want {
				t.Errorf("Suggest(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}
