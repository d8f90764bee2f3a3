//go:build integration

package submit_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/k8s/submit"
)

// confinedApp is one application as its driver sees it: its driver pod,
// the objects the driver made for its executors, and a client with a
// token of the driver's account bound to the driver pod, as the kubelet
// mounts it.
type confinedApp struct {
	id       string
	driver   *corev1.Pod
	exec     *podspec.ExecutorConf
	pod      *corev1.Pod // executor 1
	client   kubernetes.Interface
	selector string
}

// TestHardeningDriverConfinedToItsApplication: with drover rbac's policy,
// each driver's account may create, change and delete only its own
// application's objects. Two applications share a namespace; each
// driver's token tries the other's Secret, pods, ConfigMap and Service,
// and the ways around the policy (a forged owner, a name or label of the
// other application, a pod with the account's token, a token Secret);
// the API server refuses each, while the same calls on its own objects
// succeed.
func TestHardeningDriverConfinedToItsApplication(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	ctx := t.Context()
	o := submit.RBACOptions{Namespace: ns}
	if _, err := submit.ApplyRBAC(ctx, env.Client, o, submit.NamespaceOptions{}); err != nil {
		t.Fatal(err)
	}
	objs, err := submit.RBAC(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range objs {
			switch obj := obj.(type) {
			case *admissionv1.ValidatingAdmissionPolicy:
				_ = env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(t.Context(), obj.Name, metav1.DeleteOptions{})
			case *admissionv1.ValidatingAdmissionPolicyBinding:
				_ = env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(t.Context(), obj.Name, metav1.DeleteOptions{})
			}
		}
	})

	a, b := newConfinedApp(t, ns, "alpha"), newConfinedApp(t, ns, "beta")
	// The API server applies a new policy once its informer has it: wait
	// until a probe, which only the policy refuses, is refused.
	waitConfined(t, a, b)
	a.start(t)
	b.start(t)

	for _, pair := range [][2]*confinedApp{{a, b}, {b, a}} {
		me, other := pair[0], pair[1]
		t.Run(me.driver.Name+" on "+other.driver.Name, func(t *testing.T) {
			pods := me.client.CoreV1().Pods(ns)
			refused := func(what string, err error, want string) {
				t.Helper()
				switch {
				case err == nil:
					t.Errorf("%s: allowed, want refused", what)
				case !strings.Contains(err.Error(), want):
					t.Errorf("%s: %v, want a refusal saying %q", what, err, want)
				default:
					t.Logf("%s: refused: %v", what, err)
				}
			}
			const owns, foreign = "only objects its pod owns", "only its own application's drover Secrets"
			authName := podspec.AuthSecretName(other.id)

			// The attack of the issue: a pod of mine that reads the other
			// application's key, in each way a pod can.
			steal := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
				p := ownedPod(me, name)
				edit(p)
				return p
			}
			for _, p := range []*corev1.Pod{
				steal("steal-volume", func(p *corev1.Pod) {
					p.Spec.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: authName}}}}
				}),
				steal("steal-projected", func(p *corev1.Pod) {
					p.Spec.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
						Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: authName}}}}}}}}
				}),
				steal("steal-env", func(p *corev1.Pod) {
					p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: authName}, Key: podspec.TLSKey}}}}
				}),
				steal("steal-envfrom", func(p *corev1.Pod) {
					p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: authName}}}}}}
				}),
				steal("steal-driver-secret", func(p *corev1.Pod) {
					p.Spec.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: podspec.DriverSecretName(other.id)}}}}
				}),
			} {
				_, err := pods.Create(ctx, p, metav1.CreateOptions{})
				refused("creating pod "+p.Name+" that reads a Secret of "+other.id, err, foreign)
			}
			// The executor pod as podspec builds it, given the other's
			// Secret instead of mine.
			stolen := me.exec
			copied := *stolen
			copied.AuthSecretName = authName
			p, err := podspec.BuildExecutorPod(&copied, 7)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pods.Create(ctx, p, metav1.CreateOptions{})
			refused("creating executor pod "+p.Name+" that reads "+authName, err, foreign)

			// Its pods: patch, delete, delete them all.
			_, err = pods.Patch(ctx, other.pod.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"`+snapshot.LabelInactive+`":"true"}}}`), metav1.PatchOptions{})
			refused("patching pod "+other.pod.Name, err, owns)
			refused("deleting pod "+other.pod.Name, pods.Delete(ctx, other.pod.Name, metav1.DeleteOptions{}), owns)
			refused("deleting the pods "+other.selector,
				pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: other.selector}), owns)
			_, err = pods.Patch(ctx, other.driver.Name, types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+podspec.AnnotationExecutorsHeld+`":"x"}}}`), metav1.PatchOptions{})
			refused("annotating driver pod "+other.driver.Name, err, owns)
			refused("deleting driver pod "+other.driver.Name, pods.Delete(ctx, other.driver.Name, metav1.DeleteOptions{}), owns)
			// Its Secret and ConfigMap; its Service (a Role without
			// services refuses before the policy does).
			refused("deleting Secret "+authName, me.client.CoreV1().Secrets(ns).Delete(ctx, authName, metav1.DeleteOptions{}), owns)
			cm := podspec.ConfigMapName(other.id)
			refused("deleting ConfigMap "+cm, me.client.CoreV1().ConfigMaps(ns).Delete(ctx, cm, metav1.DeleteOptions{}), owns)
			svc := other.driver.Name + "-svc"
			refused("deleting Service "+svc, me.client.CoreV1().Services(ns).Delete(ctx, svc, metav1.DeleteOptions{}), "forbidden")

			// The ways around: an owner it is not, a name or label of the
			// other application, its own account's token in a pod, a
			// token Secret.
			forged := ownedPod(me, "forged-owner")
			forged.OwnerReferences = []metav1.OwnerReference{podspec.OwnerReference(other.driver)}
			_, err = pods.Create(ctx, forged, metav1.CreateOptions{})
			refused("creating a pod owned by "+other.driver.Name, err, owns)
			squat := podspec.ExecutorAuthSecret(&copied)
			squat.Name = "drover-exec-" + strings.TrimPrefix(other.id, "drover-") + "x-auth"
			_, err = me.client.CoreV1().Secrets(ns).Create(ctx, squat, metav1.CreateOptions{})
			refused("creating Secret "+squat.Name, err, "only of its own application")
			spoof := ownedPod(me, "spoofed-label")
			spoof.Labels = map[string]string{snapshot.LabelAppID: other.id}
			_, err = pods.Create(ctx, spoof, metav1.CreateOptions{})
			refused("creating a pod labelled "+other.id, err, "only with its own application's id")
			tokened := ownedPod(me, "with-token")
			tokened.Spec.AutomountServiceAccountToken = nil
			tokened.Spec.ServiceAccountName = submit.DefaultServiceAccount
			_, err = pods.Create(ctx, tokened, metav1.CreateOptions{})
			refused("creating a pod with the account's token", err, "a token of its own account")
			token := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSuffix(me.driver.Name, "driver") + "token", OwnerReferences: []metav1.OwnerReference{podspec.OwnerReference(me.driver)},
					Annotations: map[string]string{corev1.ServiceAccountNameKey: submit.DefaultServiceAccount}},
				Type: corev1.SecretTypeServiceAccountToken,
			}
			_, err = me.client.CoreV1().Secrets(ns).Create(ctx, token, metav1.CreateOptions{})
			refused("creating a service-account-token Secret", err, "only Opaque Secrets")

		})
	}
	// Each driver's calls on its own objects: all allowed.
	for _, me := range []*confinedApp{a, b} {
		t.Run(me.driver.Name+" on its own", func(t *testing.T) {
			pods := me.client.CoreV1().Pods(ns)
			allowed := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Errorf("%s: %v, want allowed", what, err)
				}
			}
			_, err := pods.Patch(ctx, me.pod.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"`+snapshot.LabelInactive+`":"true"}}}`), metav1.PatchOptions{})
			allowed("patching my pod "+me.pod.Name, err)
			_, err = pods.Patch(ctx, me.driver.Name, types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+podspec.AnnotationExecutorsHeld+`":"x"}}}`), metav1.PatchOptions{})
			allowed("annotating my driver pod "+me.driver.Name, err)
			allowed("deleting my pod "+me.pod.Name, pods.Delete(ctx, me.pod.Name, metav1.DeleteOptions{}))
			second, err := podspec.BuildExecutorPod(me.exec, 2)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pods.Create(ctx, second, metav1.CreateOptions{})
			allowed("creating my executor pod "+second.Name, err)
			// A Secret of the user's, as spark.kubernetes.executor.secrets.*
			// names it, is no application's.
			user := ownedPod(me, "reads-a-user-secret")
			user.Labels = map[string]string{snapshot.LabelAppID: me.id, snapshot.LabelRole: "executor"}
			user.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "team-s3-keys"}}}}
			_, err = pods.Create(ctx, user, metav1.CreateOptions{})
			allowed("creating a pod that reads the user's Secret team-s3-keys", err)
			allowed("deleting my pods "+me.selector, pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: me.selector}))
			allowed("deleting my Secret", me.client.CoreV1().Secrets(ns).Delete(ctx, podspec.AuthSecretName(me.id), metav1.DeleteOptions{}))
			allowed("deleting my ConfigMap", me.client.CoreV1().ConfigMaps(ns).Delete(ctx, podspec.ConfigMapName(me.id), metav1.DeleteOptions{}))
		})
	}
}

// newConfinedApp creates application name's driver pod and Service as
// drover submit does (with the admin's rights) and mints a token of the
// driver's account bound to the pod.
func newConfinedApp(t *testing.T, ns, name string) *confinedApp {
	t.Helper()
	env := cluster.Env(t)
	ctx := t.Context()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	app := &confinedApp{id: "drover-" + hex.EncodeToString(b)}
	conf := config.New()
	for k, v := range map[string]string{
		config.AppName.Key():                               name,
		config.KubernetesNamespace.Key():                   ns,
		config.KubernetesContainerImage.Key():              "drover-test:latest",
		config.KubernetesDriverServiceAccountName.Key():    submit.DefaultServiceAccount,
		config.KubernetesNodeSelector.Prefix() + "nowhere": "true", // pods stay pending: nothing runs
	} {
		conf.Set(k, v)
	}
	dc, err := k8sconf.DriverConf(conf, app.id, []string{"/bin/false"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	driver, err := podspec.BuildDriverPod(dc)
	if err != nil {
		t.Fatal(err)
	}
	if app.driver, err = env.Client.CoreV1().Pods(ns).Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, podspec.DriverService(dc, app.driver), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, submit.DefaultServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: app.driver.Name, UID: app.driver.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: env.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	if app.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	// The token is the driver's, bound to its pod, as the kubelet's are.
	who, err := app.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := who.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != app.driver.Name {
		t.Fatalf("the token's user %+v is not bound to pod %s", who.Status.UserInfo, app.driver.Name)
	}

	if app.exec, err = k8sconf.ExecutorConf(conf, app.id, app.driver, "drover://"+app.driver.Name+"-svc:7078", []string{"/bin/false"}); err != nil {
		t.Fatal(err)
	}
	app.exec.Credentials = podspec.Credentials{Secret: "not-a-real-secret"}
	app.selector = snapshot.LabelAppID + "=" + app.id + "," + snapshot.LabelRole + "=executor"
	return app
}

// start creates, as the driver does, its executors' ConfigMap, Secret and
// first pod, which the policy must allow.
func (app *confinedApp) start(t *testing.T) {
	t.Helper()
	ctx, ns, name := t.Context(), app.driver.Namespace, app.driver.Name
	if _, err := app.client.CoreV1().ConfigMaps(ns).Create(ctx, podspec.ExecutorConfigMap(app.exec, map[string]string{"k": "v"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the driver of %s creating its ConfigMap: %v", name, err)
	}
	if _, err := app.client.CoreV1().Secrets(ns).Create(ctx, podspec.ExecutorAuthSecret(app.exec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the driver of %s creating its Secret: %v", name, err)
	}
	pod, err := podspec.BuildExecutorPod(app.exec, 1)
	if err != nil {
		t.Fatal(err)
	}
	if app.pod, err = app.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the driver of %s creating its executor pod: %v", name, err)
	}
}

// ownedPod is a pod that me's driver owns, which reads nothing, named
// name after the application.
func ownedPod(me *confinedApp, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSuffix(me.driver.Name, "driver") + name, OwnerReferences: []metav1.OwnerReference{podspec.OwnerReference(me.driver)}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			NodeSelector:                 map[string]string{"nowhere": "true"},
			Containers:                   []corev1.Container{{Name: "c", Image: "x"}},
		},
	}
}

// waitConfined waits until the policy refuses a's driver a pod that b's
// driver pod owns (the API server loads policies asynchronously).
func waitConfined(t *testing.T, a, b *confinedApp) {
	t.Helper()
	i := 0
	var err error
	if !poll(10*time.Second, 200*time.Millisecond, func() bool {
		probe := ownedPod(a, fmt.Sprintf("probe-%d", i))
		i++
		probe.OwnerReferences = []metav1.OwnerReference{podspec.OwnerReference(b.driver)}
		_, err = a.client.CoreV1().Pods(a.driver.Namespace).Create(t.Context(), probe, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "denied request")
	}) {
		t.Errorf("a driver still creates pods another owns after 10s (last: %v): no confinement policy in force", err)
	}
}
