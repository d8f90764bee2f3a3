package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
)

// FromSubmit is the DroverApplication of a drover submit command line
// (drover submit --as-object): conf is the configuration the user gave,
// already checked by drover submit, resource the application and args its
// arguments. The object carries that configuration, not the pods submit
// would build from it: Spec.Conf gives conf back, less the controller's
// keys. Those are left out and listed in dropped, except
// spark.kubernetes.namespace, which becomes the object's namespace, and
// the pod template files, which readFile reads into the PodTemplate
// fields. Settings that spark.redaction.regex marks are refused: an
// object meant for a Git repository must not carry secrets.
func FromSubmit(conf *config.Conf, resource string, args []string, readFile func(string) ([]byte, error)) (app *DroverApplication, dropped []string, err error) {
	explicit := conf.Explicit()
	var errs []error
	var sensitive []string
	for _, k := range slices.Sorted(maps.Keys(explicit)) {
		if conf.Sensitive(k, explicit[k]) {
			sensitive = append(sensitive, k)
		}
	}
	if len(sensitive) > 0 {
		errs = append(errs, fmt.Errorf("%s: secret settings cannot go into an object kept in Git; "+
			"give them to the driver from a Secret (spark.kubernetes.driver.secretKeyRef.*)", strings.Join(sensitive, ", ")))
	}
	if f := explicit[config.KubernetesVolcanoPodGroupTemplateFile.Key()]; f != "" {
		errs = append(errs, fmt.Errorf("%s=%s: the controller cannot read a file of this machine, and a DroverApplication has no PodGroup template",
			config.KubernetesVolcanoPodGroupTemplateFile.Key(), f))
	}
	app = &DroverApplication{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: KindApplication},
		ObjectMeta: metav1.ObjectMeta{Name: objectName(explicit[config.AppName.Key()], resource),
			Namespace: explicit[config.KubernetesNamespace.Key()]},
		Spec: DroverApplicationSpec{MainApplicationFile: resource, Arguments: args},
	}
	for _, t := range []struct {
		key  string
		into **corev1.PodTemplateSpec
	}{
		{config.KubernetesDriverPodTemplateFile.Key(), &app.Spec.Driver.PodTemplate},
		{config.KubernetesExecutorPodTemplateFile.Key(), &app.Spec.Executor.PodTemplate},
	} {
		if f := explicit[t.key]; f != "" {
			if *t.into, err = readTemplate(f, readFile); err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %w", t.key, f, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	for k := range explicit {
		if IsControllerKey(k) {
			delete(explicit, k)
			if k != config.KubernetesNamespace.Key() && k != config.KubernetesDriverPodTemplateFile.Key() &&
				k != config.KubernetesExecutorPodTemplateFile.Key() {
				dropped = append(dropped, k)
			}
		}
	}
	app.Spec.SetConf(explicit)
	slices.Sort(dropped)
	return app, dropped, nil
}

// readTemplate reads a pod template file (a v1 Pod in YAML, as
// spark.kubernetes.*.podTemplateFile holds) into a PodTemplateSpec.
func readTemplate(file string, readFile func(string) ([]byte, error)) (*corev1.PodTemplateSpec, error) {
	b, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the pod template: %w", err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("parsing the pod template: %w", err)
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
		Spec:       pod.Spec,
	}, nil
}

// objectName is the application's name made a DNS-1123 label, as object
// names must be: spark.app.name, else the binary's name.
func objectName(appName, resource string) string {
	if appName == "" {
		appName = path.Base(strings.TrimPrefix(resource, "local://"))
	}
	var b strings.Builder
	for _, r := range strings.ToLower(appName) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-")
	}
	if name == "" {
		return "drover-application"
	}
	return name
}

// YAML is app as a manifest for kubectl apply: without the status and the
// empty creation time that only the API server sets.
func YAML(app *DroverApplication) ([]byte, error) {
	b, err := json.Marshal(app)
	if err != nil {
		return nil, fmt.Errorf("encoding the DroverApplication: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding the DroverApplication: %w", err)
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		for k, v := range spec {
			// Structs such as driver: {} say nothing.
			if sub, ok := v.(map[string]any); ok && len(sub) == 0 {
				delete(spec, k)
			}
		}
	}
	if meta, ok := m["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
