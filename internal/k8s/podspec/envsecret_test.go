package podspec_test

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestSensitiveEnvStaysInTheSecret: a spark.executorEnv.* or
// spark.kubernetes.driverEnv.* value that spark.redaction.regex marks (by
// key or by value) reaches its container by secretKeyRef from the
// application's Secret, owned by the driver pod; no pod spec or ConfigMap
// carries it. Other values stay literal.
func TestSensitiveEnvStaysInTheSecret(t *testing.T) {
	const execCanary, driverCanary, valueCanary = "canary-e1", "canary-d2", "token-canary-v3"
	conf := newConf(t, "spark.kubernetes.container.image=img", "spark.kubernetes.namespace=spark",
		"spark.executorEnv.DB_PASSWORD="+execCanary, "spark.executorEnv.AWS_REGION=eu-west-1",
		"spark.executorEnv.OPAQUE="+valueCanary, // its value matches (token)
		"spark.kubernetes.driverEnv.AWS_SECRET_ACCESS_KEY="+driverCanary, "spark.kubernetes.driverEnv.AWS_REGION=eu-west-1")
	canaries := []string{execCanary, driverCanary, valueCanary}
	noCanary := func(what string, obj any) {
		t.Helper()
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range canaries {
			if strings.Contains(string(y), c) {
				t.Errorf("%s shows %s:\n%s", what, c, y)
			}
		}
	}
	fromSecret := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	userVars := func(ctr corev1.Container, names ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for _, e := range ctr.Env {
			for _, n := range names {
				if e.Name == n {
					out = append(out, e)
				}
			}
		}
		return out
	}

	t.Run("executors", func(t *testing.T) {
		ec, err := k8sconf.ExecutorConf(conf, testAppID, driverPod("spark"), testDriverURL, []string{"/app"})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := podspec.BuildExecutorPod(ec, 1)
		if err != nil {
			t.Fatal(err)
		}
		noCanary("the executor pod", pod)
		noCanary("the executor ConfigMap", podspec.ExecutorConfigMap(ec, k8sconf.ExecutorConfig(conf.Explicit())))
		secret := podspec.AuthSecretName(testAppID)
		want := []corev1.EnvVar{
			{Name: "AWS_REGION", Value: "eu-west-1"},
			{Name: "DB_PASSWORD", ValueFrom: fromSecret(secret, "env.DB_PASSWORD")},
			{Name: "OPAQUE", ValueFrom: fromSecret(secret, "env.OPAQUE")},
		}
		if diff := cmp.Diff(want, userVars(pod.Spec.Containers[0], "AWS_REGION", "DB_PASSWORD", "OPAQUE")); diff != "" {
			t.Errorf("the executor's variables (-want,+got):\n%s", diff)
		}
		// Authentication off: the Secret exists all the same.
		sec := podspec.ExecutorAuthSecret(ec)
		if sec == nil {
			t.Fatal("no executor Secret for the sensitive variables")
		}
		if diff := cmp.Diff(map[string]string{"env.DB_PASSWORD": execCanary, "env.OPAQUE": valueCanary}, stringData(sec)); diff != "" {
			t.Errorf("the executors' Secret (-want,+got):\n%s", diff)
		}
		if sec.Name != secret || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Name != driverPod("spark").Name {
			t.Errorf("the executors' Secret is %s owned by %v; want %s owned by the driver pod", sec.Name, sec.OwnerReferences, secret)
		}
	})

	t.Run("driver", func(t *testing.T) {
		dc, err := k8sconf.DriverConf(conf, testAppID, []string{"/app"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := podspec.BuildDriverPod(dc); err == nil || !strings.Contains(err.Error(), "no Secret") {
			t.Errorf("a driver pod with sensitive variables and no Secret: %v", err)
		}
		dc.SecretName = podspec.DriverSecretName(testAppID)
		pod, err := podspec.BuildDriverPod(dc)
		if err != nil {
			t.Fatal(err)
		}
		noCanary("the driver pod", pod)
		want := []corev1.EnvVar{
			{Name: "AWS_REGION", Value: "eu-west-1"},
			{Name: "AWS_SECRET_ACCESS_KEY", ValueFrom: fromSecret(dc.SecretName, "env.AWS_SECRET_ACCESS_KEY")},
		}
		if diff := cmp.Diff(want, userVars(pod.Spec.Containers[0], "AWS_REGION", "AWS_SECRET_ACCESS_KEY")); diff != "" {
			t.Errorf("the driver's variables (-want,+got):\n%s", diff)
		}
		got := stringData(podspec.DriverSecret(dc, nil, nil, pod))
		if got["env.AWS_SECRET_ACCESS_KEY"] != driverCanary {
			t.Errorf("the driver's Secret lacks the variable: %v", got)
		}
	})
}

// TestSensitiveEnvNames: a sensitive variable whose name cannot be a
// Secret key is refused, naming its key, before any pod exists.
func TestSensitiveEnvNames(t *testing.T) {
	for _, key := range []string{"spark.executorEnv.DB:PASSWORD", "spark.kubernetes.driverEnv.DB:PASSWORD"} {
		conf := newConf(t, "spark.kubernetes.container.image=img", key+"=x")
		_, execErr := k8sconf.ExecutorConf(conf, testAppID, nil, testDriverURL, []string{"/app"})
		_, drvErr := k8sconf.DriverConf(conf, testAppID, []string{"/app"}, nil)
		err := execErr
		if strings.Contains(key, "driverEnv") {
			err = drvErr
		}
		if err == nil || !strings.Contains(err.Error(), key+": spark.redaction.regex marks its value") {
			t.Errorf("%s: error %v, want one naming the key", key, err)
		}
	}
}

func stringData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}
