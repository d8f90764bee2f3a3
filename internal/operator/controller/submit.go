package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// AppID is the application id of an object's attempt: derived from the
// object's UID and the attempt, so a controller that restarts mid-way
// builds the same names (driver pod, config map, Secret) again and finds
// what it had created instead of creating more.
func AppID(uid types.UID, attempt int32) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + strconv.Itoa(int(attempt))))
	return "drover-" + hex.EncodeToString(sum[:8])
}

// errPartial is a transient error: an earlier try of the attempt left
// some of its objects and no driver pod; they were removed and the next
// try creates them all.
var errPartial = errors.New("an earlier try of this attempt left its configuration without a driver pod")

// submitAttempt submits attempt of app with drover submit's own code. An
// error is transient (the API server could not be reached, or answered
// with a server error): the reconcile is retried with back-off. What the
// spec or the API server's refusals cause is in the Submission.
func (r *Reconciler) submitAttempt(ctx context.Context, app *v1alpha1.DroverApplication, attempt int32) (Submission, error) {
	appID := AppID(app.UID, attempt)
	s := Submission{Attempt: attempt, AppID: appID}
	plan, err := r.prepare(app, appID)
	if err != nil {
		s.Err, s.Invalid = err, true
		return s, nil
	}
	s.DriverPod = plan.Pod.Name
	if plan.Driver.UIPort != 0 {
		s.UIAddress = fmt.Sprintf("http://%s.%s.svc:%d", plan.Driver.ServiceName, plan.Namespace, plan.Driver.UIPort)
	}
	if r.owned(ctx, app, plan.Pod.Name, false) {
		return s, nil // created by an earlier try, already in the cache
	}
	plan.Pod.OwnerReferences = append(plan.Pod.OwnerReferences, ownerRef(app))
	_, err = plan.Create(ctx, r.Clientset)
	switch {
	case err == nil:
		return s, nil
	case apierrors.IsAlreadyExists(err):
		// An earlier try of this attempt, cut short by a restart: the
		// driver pod, when it exists, is the attempt's.
		if r.owned(ctx, app, plan.Pod.Name, true) {
			return s, nil
		}
		return s, r.removePartial(ctx, plan)
	case refused(err):
		s.Err = err
		return s, nil
	}
	return s, fmt.Errorf("submitting attempt %d: %w", attempt, err)
}

// owned reports whether the pod exists and is app's, from the cache or,
// with live, the API server.
func (r *Reconciler) owned(ctx context.Context, app *v1alpha1.DroverApplication, name string, live bool) bool {
	var pod corev1.Pod
	key := types.NamespacedName{Namespace: app.Namespace, Name: name}
	var err error
	if live {
		err = r.APIReader.Get(ctx, key, &pod)
	} else {
		err = r.Client.Get(ctx, key, &pod)
	}
	if err != nil {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.UID == app.UID {
			return true
		}
	}
	return false
}

// removePartial deletes the config map and Secret an interrupted Create
// left without their pod (they are owned by nothing yet).
func (r *Reconciler) removePartial(ctx context.Context, plan *submit.Plan) error {
	core := r.Clientset.CoreV1()
	err := core.ConfigMaps(plan.Namespace).Delete(ctx, plan.Driver.ConfigMapName, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if name := podspec.DriverSecretName(plan.AppID); err == nil {
		if err = core.Secrets(plan.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("%w; removing it: %w", errPartial, err)
	}
	return errPartial
}

// refused tells the API server's refusals of the driver's objects (no
// right, a quota, an invalid object, a missing service account or queue),
// which are the application's failures, from transient errors.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsNotFound(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err)
}

func ownerRef(app *v1alpha1.DroverApplication) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApplication,
		Name: app.Name, UID: app.UID, Controller: &t, BlockOwnerDeletion: &t}
}

// prepare is drover submit's check and build of the driver's objects, with
// the spec's configuration and the controller's keys: the master (the API
// server this controller talks to), cluster mode, the namespace, the
// application id, and the pod templates written to files as submit reads
// them.
func (r *Reconciler) prepare(app *v1alpha1.DroverApplication, appID string) (*submit.Plan, error) {
	conf, err := app.Spec.Conf()
	if err != nil {
		return nil, err
	}
	if _, ok := conf[config.AppName.Key()]; !ok {
		conf[config.AppName.Key()] = app.Name
	}
	conf[config.Master.Key()] = r.Master
	conf[config.DeployMode.Key()] = "cluster"
	conf[config.KubernetesNamespace.Key()] = app.Namespace
	conf[config.AppID.Key()] = appID
	conf[config.KubernetesSubmissionWaitAppCompletion.Key()] = "false"
	dir, err := os.MkdirTemp("", "drover-operator-")
	if err != nil {
		return nil, fmt.Errorf("writing the pod templates: %w", err)
	}
	defer os.RemoveAll(dir)
	for key, tpl := range map[string]*corev1.PodTemplateSpec{
		config.KubernetesDriverPodTemplateFile.Key():   app.Spec.Driver.PodTemplate,
		config.KubernetesExecutorPodTemplateFile.Key(): app.Spec.Executor.PodTemplate,
	} {
		if tpl == nil {
			continue
		}
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
		b, err := yaml.Marshal(&pod)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		file := filepath.Join(dir, key+".yaml")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return nil, fmt.Errorf("writing the pod template: %w", err)
		}
		conf[key] = file
	}
	c, warnings, err := config.Load(config.Sources{Overrides: conf})
	for _, w := range warnings {
		r.Log.Warn("configuration", "application", app.Namespace+"/"+app.Name, "warning", w)
	}
	if err != nil {
		return nil, err
	}
	return submit.Prepare(c, app.Spec.MainApplicationFile, app.Spec.Arguments, func() string { return appID })
}
