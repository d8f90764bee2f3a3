package submit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// Kill stops the applications id names and returns one line per
// application on what it removed. A driver pod is deleted with grace
// (nil: the pod's own), and what it owns goes by garbage collection.
// Without a driver pod, Kill deletes the executor pods (with grace), the
// config maps and the executor authentication secret: it cannot stop a
// client-mode driver process, and its line says so unless DriverState
// (at now) found the driver gone. Kill goes on past a failed deletion
// and returns every failure, joined.
func Kill(ctx context.Context, cs kubernetes.Interface, id ID, grace *int64, now time.Time) ([]string, error) {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	var killed []string
	var errs []error
	for _, a := range apps {
		if p := a.Driver; p != nil {
			err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: grace,
				PropagationPolicy:  ptrTo(metav1.DeletePropagationBackground),
			})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				killed = append(killed, a.Name())
			default:
				errs = append(errs, fmt.Errorf("deleting driver pod %s/%s: %w", p.Namespace, p.Name, err))
			}
			continue
		}
		line, err := removeApp(ctx, cs, &a, grace, now)
		killed = append(killed, line)
		errs = append(errs, err)
	}
	return killed, errors.Join(errs...)
}

// removeApp deletes the objects of an application without a driver pod.
func removeApp(ctx context.Context, cs kubernetes.Interface, a *App, grace *int64, now time.Time) (string, error) {
	var removed []string
	var errs []error
	// del records a deletion; an object already gone is not an error.
	del := func(err error, what string) bool {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s of application %s: %w", what, a.Name(), err))
		}
		return err == nil
	}
	pods := 0
	for _, p := range a.Executors {
		if del(cs.CoreV1().Pods(a.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: grace}), "executor pod "+p.Name) {
			pods++
		}
	}
	// A count, not names: there may be hundreds.
	if pods > 0 {
		removed = append(removed, plural(pods, "executor pod"))
	}
	for _, cm := range a.ConfigMaps {
		if del(cs.CoreV1().ConfigMaps(a.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{}), "configmap "+cm.Name) {
			removed = append(removed, "configmap "+cm.Name)
		}
	}
	if name := authSecret(a); name != "" {
		if del(cs.CoreV1().Secrets(a.Namespace).Delete(ctx, name, metav1.DeleteOptions{}), "secret "+name) {
			removed = append(removed, "secret "+name)
		}
	}
	mode := "client mode"
	if !a.ClientMode() {
		mode = "cluster mode, driver pod gone"
	}
	line := fmt.Sprintf("%s (%s): removed ", a.Name(), mode)
	if len(removed) == 0 {
		line += "nothing, it was gone"
	} else {
		line += strings.Join(removed, ", ")
	}
	if a.ClientMode() && !DriverState(a, now).Gone {
		line += "; its driver may still be running: stop it where it runs, or it creates new executors"
	}
	return line, errors.Join(errs...)
}

// authSecret is the name of the executor authentication secret of an
// application without a driver pod, "" when it has none: its executor pods
// read it, or its config map does not turn spark.authenticate off. Only drover's own
// secret (podspec.AuthSecretName) qualifies, never one the user mounts.
func authSecret(a *App) string {
	name := podspec.AuthSecretName(a.AppID)
	for _, p := range a.Executors {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == name {
					return name
				}
			}
		}
	}
	// spark.authenticate is on unless set to false.
	for _, cm := range a.ConfigMaps {
		v, set := confValue(&cm, config.Authenticate.Key())
		if on, err := config.Authenticate.Parse(v); !set || err == nil && on {
			return name
		}
	}
	return ""
}
