//go:build integration

package crds

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/testenv"
)

// shared is one API server with the CRDs installed, for every test here:
// starting one takes longer than all the requests.
var shared struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		_ = shared.env.Stop()
	}
	os.Exit(code)
}

func apiServer(t *testing.T) *testenv.Env {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.env, shared.err = testenv.Start(ctx, testenv.Options{Logf: t.Logf})
		if shared.err != nil {
			return
		}
		paths, _ := filepath.Glob("*.yaml")
		shared.err = shared.env.InstallCRDs(ctx, paths...)
	})
	if shared.err != nil {
		testenv.Unavailable(t, shared.err)
	}
	return shared.env
}

// create sends obj to the API server as a dry run (validated, not stored)
// and returns its error.
func create(t *testing.T, env *testenv.Env, resource string, obj map[string]any) error {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The clientset's untyped REST client: the API server's own answer,
	// with no client-side schema in the way.
	return env.Client.Discovery().RESTClient().Post().
		AbsPath("/apis", v1alpha1.Group, v1alpha1.Version, "namespaces", "default", resource).
		Param("dryRun", "All").SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error()
}

func goodApp() map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.KindApplication,
		"metadata": map[string]any{"name": "wordcount"},
		"spec": map[string]any{
			"image": "registry.example/wordcount:1.0", "mainApplicationFile": "local:///app/wordcount",
			"arguments": []any{"/data/books", "20"},
			"executor":  map[string]any{"instances": 2, "memory": "1g"},
		},
	}
}

func goodScheduled() map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.KindScheduledApplication,
		"metadata": map[string]any{"name": "nightly"},
		"spec":     map[string]any{"schedule": "0 3 * * *", "template": goodApp()["spec"]},
	}
}

// set sets the value at the dotted path below obj (a key may not contain
// a dot, except the last of a sparkConf path), making maps on the way.
func set(obj map[string]any, path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	if i := slices.Index(parts, "sparkConf"); i >= 0 && i < len(parts)-1 {
		parts = append(parts[:i+1], strings.Join(parts[i+1:], "."))
	}
	m := obj
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	if v == nil {
		delete(m, parts[len(parts)-1])
	} else {
		m[parts[len(parts)-1]] = v
	}
	return obj
}

// change is a path and its new value (nil removes it).
type change struct {
	path  string
	value any
}

func TestOperatorBadObjects(t *testing.T) {
	env := apiServer(t)
	tests := []struct {
		name      string
		scheduled bool
		changes   []change
		// want are substrings of the API server's message: the field and
		// what is wrong.
		want []string
	}{
		{name: "fractional executor memory", changes: []change{{"spec.executor.memory", "1.5g"}},
			want: []string{"spec.executor.memory", "must be a size"}},
		{name: "driver memory in words", changes: []change{{"spec.driver.memory", "lots"}},
			want: []string{"spec.driver.memory", "must be a size"}},
		{name: "negative memory overhead", changes: []change{{"spec.executor.memoryOverhead", "-1g"}},
			want: []string{"spec.executor.memoryOverhead", "must be a size"}},
		{name: "no cores", changes: []change{{"spec.executor.cores", 0}},
			want: []string{"spec.executor.cores", "greater than or equal to 1"}},
		{name: "negative instances", changes: []change{{"spec.executor.instances", -1}},
			want: []string{"spec.executor.instances", "greater than or equal to 0"}},
		{name: "core limit in words", changes: []change{{"spec.driver.coreLimit", "2 cpus"}},
			want: []string{"spec.driver.coreLimit", "CPU quantity"}},
		{name: "unknown restartPolicy", changes: []change{{"spec.restartPolicy.type", "Sometimes"}},
			want: []string{"spec.restartPolicy.type", `supported values: "Never", "OnFailure"`}},
		{name: "negative retries", changes: []change{{"spec.restartPolicy.type", "OnFailure"},
			{"spec.restartPolicy.onFailureRetries", -1}},
			want: []string{"spec.restartPolicy.onFailureRetries", "greater than or equal to 0"}},
		{name: "retries with Never", changes: []change{{"spec.restartPolicy.onFailureRetries", 3}},
			want: []string{"spec.restartPolicy.type", "retries need type OnFailure"}},
		{name: "minExecutors above maxExecutors", changes: []change{
			{"spec.dynamicAllocation", map[string]any{"enabled": true, "minExecutors": 5, "maxExecutors": 2}}},
			want: []string{"spec.dynamicAllocation.minExecutors", "minExecutors must be ≤ maxExecutors"}},
		{name: "initialExecutors below minExecutors", changes: []change{
			{"spec.dynamicAllocation", map[string]any{"minExecutors": 2, "initialExecutors": 1}}},
			want: []string{"spec.dynamicAllocation.initialExecutors", "initialExecutors must be ≥ minExecutors"}},
		{name: "an s3 application", changes: []change{{"spec.mainApplicationFile", "s3://bucket/wordcount"}},
			want: []string{"spec.mainApplicationFile", "drover uploads no files"}},
		{name: "empty image", changes: []change{{"spec.image", ""}},
			want: []string{"spec.image", "at least 1 chars long"}},
		{name: "no application", changes: []change{{"spec.mainApplicationFile", nil}},
			want: []string{"spec.mainApplicationFile", "Required value"}},
		{name: "unknown pull policy", changes: []change{{"spec.imagePullPolicy", "Sometimes"}},
			want: []string{"spec.imagePullPolicy", "supported values"}},
		{name: "queue that is no label value", changes: []change{{"spec.queue", "night queue"}},
			want: []string{"spec.queue", "must be a label value"}},
		{name: "negative time to live", changes: []change{{"spec.timeToLiveSeconds", -5}},
			want: []string{"spec.timeToLiveSeconds", "greater than or equal to 0"}},
		{name: "the controller's key", changes: []change{{"spec.sparkConf.spark.master", "k8s://https://elsewhere:6443"}},
			want: []string{"spec.sparkConf", "key spark.master is the controller's"}},
		{name: "a key drover ignores", changes: []change{{"spec.sparkConf.hadoop.fs.defaultFS", "s3://x"}},
			want: []string{"spec.sparkConf", "key hadoop.fs.defaultFS is neither spark.* nor drover.*"}},
		{name: "conf size submit refuses", changes: []change{{"spec.sparkConf.spark.executor.memory", "1.5g"}},
			want: []string{"spec.sparkConf[spark.executor.memory]", "must be a size"}},
		{name: "conf integer submit refuses", changes: []change{{"spec.sparkConf.spark.executor.cores", "0"}},
			want: []string{"spec.sparkConf[spark.executor.cores]", "must be an integer ≥ 1"}},
		{name: "conf boolean submit refuses", changes: []change{{"spec.sparkConf.spark.dynamicAllocation.enabled", "yes"}},
			want: []string{"spec.sparkConf[spark.dynamicAllocation.enabled]", "must be true or false"}},
		{name: "conf restart policy submit refuses", changes: []change{{"spec.sparkConf.spark.kubernetes.driver.restartPolicy", "Always"}},
			want: []string{"spec.sparkConf[spark.kubernetes.driver.restartPolicy]", "must be one of Never, OnFailure"}},
		{name: "bad cron", scheduled: true, changes: []change{{"spec.schedule", "every night"}},
			want: []string{"spec.schedule", "must be five cron fields"}},
		{name: "cron with four fields", scheduled: true, changes: []change{{"spec.schedule", "0 3 * *"}},
			want: []string{"spec.schedule", "must be five cron fields"}},
		{name: "unknown macro", scheduled: true, changes: []change{{"spec.schedule", "@fortnightly"}},
			want: []string{"spec.schedule", "must be five cron fields"}},
		{name: "empty time zone", scheduled: true, changes: []change{{"spec.timeZone", ""}},
			want: []string{"spec.timeZone", "at least 1 chars long"}},
		{name: "unknown concurrencyPolicy", scheduled: true, changes: []change{{"spec.concurrencyPolicy", "Queue"}},
			want: []string{"spec.concurrencyPolicy", `supported values: "Allow", "Forbid", "Replace"`}},
		{name: "negative history limit", scheduled: true, changes: []change{{"spec.failedRunHistoryLimit", -1}},
			want: []string{"spec.failedRunHistoryLimit", "greater than or equal to 0"}},
		{name: "bad memory in the template", scheduled: true, changes: []change{{"spec.template.executor.memory", "2 GB"}},
			want: []string{"spec.template.executor.memory", "must be a size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, resource := goodApp(), v1alpha1.ResourceApplications
			if tt.scheduled {
				obj, resource = goodScheduled(), v1alpha1.ResourceScheduledApplications
			}
			for _, c := range tt.changes {
				set(obj, c.path, c.value)
			}
			err := create(t, env, resource, obj)
			if err == nil {
				t.Fatalf("the API server accepted %v", obj["spec"])
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the API server's message does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestOperatorGoodObjects(t *testing.T) {
	env := apiServer(t)
	full := goodApp()
	for _, c := range []change{
		{"spec.imagePullPolicy", "Always"}, {"spec.queue", "batch"}, {"spec.timeToLiveSeconds", 3600},
		{"spec.suspend", true},
		{"spec.driver", map[string]any{"cores": 1, "coreRequest": "500m", "coreLimit": "1.5", "memory": "512m",
			"memoryOverhead": "0", "serviceAccount": "drover-driver",
			"podTemplate": map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "driver"}}}}}},
		{"spec.executor.podTemplate", map[string]any{"spec": map[string]any{"priorityClassName": "batch"}}},
		{"spec.dynamicAllocation", map[string]any{"enabled": true, "minExecutors": 1, "initialExecutors": 2, "maxExecutors": 8}},
		{"spec.restartPolicy", map[string]any{"type": "OnFailure", "onFailureRetries": 3, "onFailureRetryInterval": 10,
			"onSubmissionFailureRetries": 2, "onSubmissionFailureRetryInterval": 20}},
		{"spec.sparkConf", map[string]any{"spark.executor.memory": "1g", "spark.driver.memory": " 2G ",
			"spark.dynamicAllocation.maxExecutors": "Infinity", "spark.eventLog.enabled": "TRUE",
			"spark.kubernetes.driver.restartPolicy": "onfailure", "spark.executorEnv.GOGC": "200"}},
	} {
		set(full, c.path, c.value)
	}
	tests := map[string]struct {
		resource string
		obj      map[string]any
	}{
		"smallest application": {v1alpha1.ResourceApplications, goodApp()},
		"every field":          {v1alpha1.ResourceApplications, full},
		"an absolute path":     {v1alpha1.ResourceApplications, set(goodApp(), "spec.mainApplicationFile", "/app/wordcount")},
		"nightly":              {v1alpha1.ResourceScheduledApplications, goodScheduled()},
		"hourly in Paris, forbidding overlaps": {v1alpha1.ResourceScheduledApplications, set(set(set(set(goodScheduled(),
			"spec.schedule", "@hourly"), "spec.timeZone", "Europe/Paris"), "spec.concurrencyPolicy", "Forbid"),
			"spec.successfulRunHistoryLimit", 0)},
		"weekdays every five minutes": {v1alpha1.ResourceScheduledApplications,
			set(goodScheduled(), "spec.schedule", "*/5 9-17 * JAN-DEC MON-FRI")},
	}
	tests["drover submit --as-object's"] = struct {
		resource string
		obj      map[string]any
	}{v1alpha1.ResourceApplications, asObject(t)}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if err := create(t, env, tt.resource, tt.obj); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// asObject is what drover submit --as-object prints for a typical command
// line, decoded.
func asObject(t *testing.T) map[string]any {
	t.Helper()
	conf, _, err := config.Load(config.Sources{Env: func(string) string { return "" }, Pairs: []string{
		"spark.kubernetes.container.image=registry.example/wordcount:1.0", "spark.executor.instances=4",
		"spark.executor.memory=2g", "spark.driver.cores=2", "spark.dynamicAllocation.enabled=false",
		"spark.kubernetes.namespace=default", "spark.master=k8s://https://kube.example:6443", "spark.app.name=Word Count"}})
	if err != nil {
		t.Fatal(err)
	}
	app, _, err := v1alpha1.FromSubmit(conf, "local:///app/wordcount", []string{"/data/books", "20"}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	y, err := v1alpha1.YAML(app)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(y, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestOperatorConfMirror: for every sparkConf key the CRD checks, the API
// server accepts exactly the values drover submit's configuration loader
// accepts, on a sample of good and bad values of every kind.
func TestOperatorConfMirror(t *testing.T) {
	env := apiServer(t)
	spec := load(t)[v1alpha1.KindApplication].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	keys := map[string]bool{}
	for _, v := range spec.Validations {
		if k, ok := strings.CutPrefix(v.FieldPath, ".sparkConf['"); ok {
			keys[strings.TrimSuffix(k, "']")] = true
		}
	}
	if len(keys) < 10 {
		t.Fatalf("found rules for %d sparkConf keys, want the well-known ones", len(keys))
	}
	values := []string{"512m", "2g", "1024k", "4GB", " 8m ", "7", "0", "1.5g", "-1g", "abc", "12x", "1 g",
		"+3", "-2", "2147483647", "2147483648", "true", "FALSE", "yes", "infinity", "Infinity", "Never",
		"onfailure", "Always", "ifnotpresent", "500m", "0.5", ".5", "0m", "batch-queue", "bad queue", "a_b.c"}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		t.Run(key, func(t *testing.T) {
			for _, v := range values {
				_, _, loadErr := config.Load(config.Sources{Pairs: []string{key + "=" + v},
					Env: func(string) string { return "" }})
				apiErr := create(t, env, v1alpha1.ResourceApplications, set(goodApp(), "spec.sparkConf."+key, v))
				if (loadErr == nil) != (apiErr == nil) {
					t.Errorf("%s=%q: drover submit's loader says %v, the API server %v", key, v, loadErr, apiErr)
				}
			}
		})
	}
}
