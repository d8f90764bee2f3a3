package v1alpha1

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-project/drover/internal/config"
)

// ControllerKeys are the configuration keys the controller decides, which
// sparkConf may not set (the CRD refuses them): where the application runs
// (master, namespace, the API servers), its identity (the application id
// and driver pod name derive from the object), how drover submit behaves,
// and files on the submitting machine, which the controller does not have
// (spec.driver.podTemplate and spec.executor.podTemplate carry templates).
var ControllerKeys = []string{
	config.Master.Key(), config.DeployMode.Key(), config.AppID.Key(), config.KubernetesNamespace.Key(),
	config.KubernetesDriverPodName.Key(), config.KubernetesSubmissionWaitAppCompletion.Key(),
	config.KubernetesDriverPodTemplateFile.Key(), config.KubernetesExecutorPodTemplateFile.Key(),
	config.KubernetesVolcanoPodGroupTemplateFile.Key(), config.KubernetesContext.Key(),
	config.KubernetesAPIServerHost.Key(), config.DriverHost.Key(),
}

// ControllerKeyPrefix starts more keys of the controller's: drover
// submit's own credentials.
const ControllerKeyPrefix = "spark.kubernetes.authenticate.submission."

// IsControllerKey reports whether key is the controller's to set.
func IsControllerKey(key string) bool {
	for _, k := range ControllerKeys {
		if k == key {
			return true
		}
	}
	return strings.HasPrefix(key, ControllerKeyPrefix)
}

// binding ties a spec field to the configuration key it sets.
type binding struct {
	path string // the field's path in the object, for messages
	key  string
	// get returns the field's value as a configuration value, and whether
	// it is set.
	get func(*DroverApplicationSpec) (string, bool)
	// set stores a configuration value in the field when the field can
	// hold it spelt exactly so (then Conf gives it back unchanged), and
	// reports whether it did.
	set func(*DroverApplicationSpec, string) bool
}

// bindings are every field that sets a configuration key. The key names
// come from internal/config's entries, never spelt here.
func bindings() []binding {
	bs := []binding{
		str("spec.image", config.KubernetesContainerImage.Key(), func(s *DroverApplicationSpec) *string { return &s.Image }),
		{path: "spec.imagePullPolicy", key: config.KubernetesContainerImagePullPolicy.Key(),
			get: func(s *DroverApplicationSpec) (string, bool) {
				return string(s.ImagePullPolicy), s.ImagePullPolicy != ""
			},
			set: func(s *DroverApplicationSpec, v string) bool {
				p, err := config.KubernetesContainerImagePullPolicy.Parse(v)
				if err != nil || p != v {
					return false
				}
				s.ImagePullPolicy = corev1.PullPolicy(v)
				return true
			}},
		str("spec.queue", config.KubernetesQueue.Key(), func(s *DroverApplicationSpec) *string { return &s.Queue }),
		int32p("spec.executor.instances", config.ExecutorInstances.Key(), 0, func(s *DroverApplicationSpec, _ bool) **int32 { return &s.Executor.Instances }),
	}
	bs = append(bs, role("spec.driver", &roleKeys{
		cores: config.DriverCores.Key(), request: config.KubernetesDriverRequestCores.Key(),
		limit: config.KubernetesDriverLimitCores.Key(), memory: config.DriverMemory.Key(),
		overhead: config.DriverMemoryOverhead.Key(), account: config.KubernetesDriverServiceAccountName.Key(),
	}, func(s *DroverApplicationSpec) *RoleSpec { return &s.Driver.RoleSpec })...)
	bs = append(bs, role("spec.executor", &roleKeys{
		cores: config.ExecutorCores.Key(), request: config.KubernetesExecutorRequestCores.Key(),
		limit: config.KubernetesExecutorLimitCores.Key(), memory: config.ExecutorMemory.Key(),
		overhead: config.ExecutorMemoryOverhead.Key(), account: config.KubernetesExecutorServiceAccountName.Key(),
	}, func(s *DroverApplicationSpec) *RoleSpec { return &s.Executor.RoleSpec })...)
	// da is the spec's DynamicAllocation, made when alloc is set and
	// there is none; reading leaves the spec as it is.
	da := func(s *DroverApplicationSpec, alloc bool) *DynamicAllocation {
		switch {
		case s.DynamicAllocation != nil:
			return s.DynamicAllocation
		case alloc:
			s.DynamicAllocation = &DynamicAllocation{}
			return s.DynamicAllocation
		}
		return &DynamicAllocation{}
	}
	bs = append(bs,
		binding{path: "spec.dynamicAllocation.enabled", key: config.DynamicAllocationEnabled.Key(),
			get: func(s *DroverApplicationSpec) (string, bool) {
				// false is the key's default: an unset field sets nothing.
				return "true", s.DynamicAllocation != nil && s.DynamicAllocation.Enabled
			},
			set: func(s *DroverApplicationSpec, v string) bool {
				if v != "true" {
					return false
				}
				da(s, true).Enabled = true
				return true
			}},
		int32p("spec.dynamicAllocation.initialExecutors", config.DynamicAllocationInitialExecutors.Key(), 0,
			func(s *DroverApplicationSpec, alloc bool) **int32 { return &da(s, alloc).InitialExecutors }),
		int32p("spec.dynamicAllocation.minExecutors", config.DynamicAllocationMinExecutors.Key(), 0,
			func(s *DroverApplicationSpec, alloc bool) **int32 { return &da(s, alloc).MinExecutors }),
		int32p("spec.dynamicAllocation.maxExecutors", config.DynamicAllocationMaxExecutors.Key(), 0,
			func(s *DroverApplicationSpec, alloc bool) **int32 { return &da(s, alloc).MaxExecutors }),
	)
	return bs
}

type roleKeys struct{ cores, request, limit, memory, overhead, account string }

func role(path string, k *roleKeys, r func(*DroverApplicationSpec) *RoleSpec) []binding {
	return []binding{
		int32p(path+".cores", k.cores, 1, func(s *DroverApplicationSpec, _ bool) **int32 { return &r(s).Cores }),
		str(path+".coreRequest", k.request, func(s *DroverApplicationSpec) *string { return &r(s).CoreRequest }),
		str(path+".coreLimit", k.limit, func(s *DroverApplicationSpec) *string { return &r(s).CoreLimit }),
		size(path+".memory", k.memory, 1, func(s *DroverApplicationSpec) *string { return &r(s).Memory }),
		size(path+".memoryOverhead", k.overhead, 0, func(s *DroverApplicationSpec) *string { return &r(s).MemoryOverhead }),
		str(path+".serviceAccount", k.account, func(s *DroverApplicationSpec) *string { return &r(s).ServiceAccount }),
	}
}

func str(path, key string, f func(*DroverApplicationSpec) *string) binding {
	return binding{path: path, key: key,
		get: func(s *DroverApplicationSpec) (string, bool) { v := *f(s); return v, v != "" },
		set: func(s *DroverApplicationSpec, v string) bool {
			if v == "" {
				return false
			}
			*f(s) = v
			return true
		}}
}

// size binds a size field; min is the smallest size in bytes it takes.
func size(path, key string, min int64, f func(*DroverApplicationSpec) *string) binding {
	b := str(path, key, f)
	b.set = func(s *DroverApplicationSpec, v string) bool {
		n, err := config.ParseBytes(v, config.MiB)
		if err != nil || n < min || v != strings.TrimSpace(v) {
			return false
		}
		*f(s) = v
		return true
	}
	return b
}

// int32p binds an optional integer field; min is the smallest it takes.
// f returns the field, making its parent struct when alloc is set.
func int32p(path, key string, min int32, f func(s *DroverApplicationSpec, alloc bool) **int32) binding {
	return binding{path: path, key: key,
		get: func(s *DroverApplicationSpec) (string, bool) {
			p := *f(s, false)
			if p == nil {
				return "", false
			}
			return strconv.Itoa(int(*p)), true
		},
		set: func(s *DroverApplicationSpec, v string) bool {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || int32(n) < min || strconv.FormatInt(n, 10) != v {
				return false
			}
			p := int32(n)
			*f(s, true) = &p
			return true
		}}
}

// Conf is the configuration the spec sets: sparkConf with the keys the
// fields set, as --conf pairs for drover submit (config.Sources.Pairs or
// Overrides). The binary, its arguments and the pod templates are not
// configuration: they are MainApplicationFile, Arguments and the
// PodTemplate fields. A field and a sparkConf entry that set one key to
// different values are an error naming both.
func (s *DroverApplicationSpec) Conf() (map[string]string, error) {
	conf := maps.Clone(s.SparkConf)
	if conf == nil {
		conf = map[string]string{}
	}
	var errs []string
	for _, b := range bindings() {
		v, ok := b.get(s)
		if !ok {
			continue
		}
		if old, dup := s.SparkConf[b.key]; dup && old != v {
			errs = append(errs, fmt.Sprintf("%s=%s and spec.sparkConf[%s]=%s set %s differently: set it in one place",
				b.path, v, b.key, old, b.key))
			continue
		}
		conf[b.key] = v
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return conf, nil
}

// SetConf stores conf in the spec: each key a field binds, spelt as the
// field holds it, in that field; the rest in SparkConf. Conf gives conf
// back unchanged. It does not check the keys: IsControllerKey tells which
// the CRD refuses.
func (s *DroverApplicationSpec) SetConf(conf map[string]string) {
	rest := maps.Clone(conf)
	for _, b := range bindings() {
		if v, ok := rest[b.key]; ok && b.set(s, v) {
			delete(rest, b.key)
		}
	}
	if len(rest) > 0 {
		s.SparkConf = rest
	}
}

// FieldKeys maps each field's path (spec.executor.memory) to the
// configuration key it sets, for documentation and tests.
func FieldKeys() map[string]string {
	m := map[string]string{}
	for _, b := range bindings() {
		m[b.path] = b.key
	}
	return m
}
