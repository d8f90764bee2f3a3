//go:build integration

package submit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestSecretsStayOutOfSight: credentials and secret-looking settings given
// to submit reach the driver through a Secret, and appear in no config
// map, pod spec, event, log, or --verbose output; so do environment
// values that spark.redaction.regex marks, which the driver's and the
// executors' containers still find in their environment.
func TestSecretsStayOutOfSight(t *testing.T) {
	env := cluster.Env(t)
	binaries(t)
	ns := restrictedNamespace(t, env)
	token := env.Config.BearerToken // the driver's API client uses it: it must arrive
	if token == "" {
		t.Fatal("the test environment has no bearer token")
	}
	const s3Secret = "s3-SECRET-value-0042"
	const execCanary, driverCanary = "canary-e1", "canary-d2"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	// The driver runs as the namespace's default account, which may do
	// nothing: it works only if its token arrived. envapp checks its
	// variable and its executors' against the sums of the values.
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns, "--verbose",
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=default",
		"--conf", "spark.kubernetes.authenticate.driver.oauthToken="+token,
		"--conf", "spark.hadoop.fs.s3a.secret.key="+s3Secret,
		"--conf", "spark.executorEnv.DB_PASSWORD="+execCanary,
		"--conf", "spark.kubernetes.driverEnv.AWS_SECRET_ACCESS_KEY="+driverCanary,
		"local://"+filepath.Join(binDir, "envapp"), "AWS_SECRET_ACCESS_KEY="+sum(driverCanary), "DB_PASSWORD="+sum(execCanary))...)
	if r.code != 0 {
		t.Fatalf("exit code %d:\n%s", r.code, r.stderr)
	}
	pod := submittedPod(t, r)
	secrets := map[string]string{"the oauth token": token, "the s3 secret": s3Secret,
		"a private key (the executors' TLS bundle)":        "PRIVATE KEY",
		"the executors' TLS session":                       "DROVER TLS SESSION",
		"spark.executorEnv.DB_PASSWORD":                    execCanary,
		"spark.kubernetes.driverEnv.AWS_SECRET_ACCESS_KEY": driverCanary}
	// The web UI's token, which submit made, is as secret.
	ctx := t.Context()
	driverSecrets, err := env.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil || len(driverSecrets.Items) != 1 {
		t.Fatalf("driver secrets: %v, %v", driverSecrets, err)
	}
	uiToken := regexp.MustCompile(`(?m)^drover\.ui\.token=(\S+)$`).FindStringSubmatch(string(driverSecrets.Items[0].Data["spark-secrets.conf"]))
	if uiToken == nil {
		t.Errorf("the driver's secret holds no drover.ui.token")
	} else {
		secrets["the web UI's token"] = uiToken[1]
	}
	look := func(where, text string) {
		t.Helper()
		for what, v := range secrets {
			if strings.Contains(text, v) {
				t.Errorf("%s shows %s", where, what)
			}
		}
	}
	look("submit's output (--verbose)", r.stdout+r.stderr)
	cms, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		y, _ := yaml.Marshal(cm)
		look("config map "+cm.Name, string(y))
	}
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		y, _ := yaml.Marshal(p.Spec)
		look("the spec of pod "+p.Name, string(y))
		if logs, err := env.ProcessNode.Logs(ns, p.Name); err == nil {
			look("the log of pod "+p.Name, string(logs))
		}
	}
	events, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		look("event "+e.Name, e.Message)
	}
	// The driver got them, through its Secret: it started its executors.
	logs, err := env.ProcessNode.Logs(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "application started") {
		t.Errorf("the driver did not start with its token:\n%s", logs)
	}
	if !strings.Contains(string(logs), "environment resolved: the driver's AWS_SECRET_ACCESS_KEY and the executors' DB_PASSWORD") {
		t.Errorf("the containers did not find the variables in their environment:\n%s", logs)
	}
	sec, err := env.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil || len(sec.Items) != 1 {
		t.Fatalf("driver secrets: %v, %v", sec, err)
	}
	data := string(sec.Items[0].Data["spark-secrets.conf"])
	if !strings.Contains(data, s3Secret) || !strings.Contains(data, "spark.kubernetes.authenticate.driver.oauthToken") {
		t.Errorf("the driver's secret lacks the settings:\n%s", data)
	}
	if len(sec.Items[0].OwnerReferences) != 1 || sec.Items[0].OwnerReferences[0].Name != pod {
		t.Errorf("the driver's secret is not owned by its pod: %v", sec.Items[0].OwnerReferences)
	}
}

// TestCredentialFilesShipInTheSecret: a credential file named on the
// submitting machine (here the token file) reaches the driver through its
// Secret; the driver, running as an account without rights, works only if
// it did.
func TestCredentialFilesShipInTheSecret(t *testing.T) {
	env := cluster.Env(t)
	_, wordcount := binaries(t)
	ns := restrictedNamespace(t, env)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(env.Config.BearerToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := drover(t, env.Kubeconfig, 3*time.Minute, clusterArgs(env, ns,
		"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=default",
		"--conf", "spark.kubernetes.authenticate.driver.oauthTokenFile="+tokenFile,
		"local://"+wordcount, wordInput(t), "3")...)
	if r.code != 0 {
		t.Fatalf("exit code %d:\n%s", r.code, r.stderr)
	}
	cms, err := env.Client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=driver"})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("driver config maps: %v, %v", cms, err)
	}
	if conf := cms.Items[0].Data["spark-defaults.conf"]; !strings.Contains(conf, "spark.kubernetes.authenticate.driver.oauthTokenFile=/opt/drover/secret/oauth-token") ||
		strings.Contains(conf, env.Config.BearerToken) {
		t.Errorf("the driver's configuration does not point at the shipped file, or holds the token:\n%s", conf)
	}
}
