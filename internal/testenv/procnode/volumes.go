package procnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/envvar"
)

// serviceAccountMountPath is where in-cluster clients look for their
// credentials (token, ca.crt, namespace); a pod's process finds the volume
// mounted there at $DROVER_SERVICEACCOUNT_DIR (envvar.ServiceAccountDir),
// which with KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT is all it
// needs to build an in-cluster client configuration.
const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// VolumeEnvName returns the environment variable holding volume's path.
func VolumeEnvName(volume string) string {
	return envvar.VolumePrefix + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(volume))
}

// prepareVolumes materialises the pod's volumes under dir, once, before its
// first container starts, and returns each volume's path by name. Volume
// types that have no meaning here (persistent volumes, CSI, ...) are skipped
// and listed in the returned slice.
func prepareVolumes(ctx context.Context, refs *podRefs, info *podInfo, dir string) (map[string]string, []string, error) {
	paths := map[string]string{}
	var skipped []string
	for _, v := range info.pod.Spec.Volumes {
		path := filepath.Join(dir, v.Name)
		var files map[string]volumeFile
		var err error
		switch {
		case v.HostPath != nil:
			paths[v.Name] = v.HostPath.Path
			continue
		case v.EmptyDir != nil:
		case v.Secret != nil:
			files, err = secretFiles(ctx, refs, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode)
		case v.ConfigMap != nil:
			files, err = configMapFiles(ctx, refs, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode)
		case v.DownwardAPI != nil:
			files, err = downwardFiles(info, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
		case v.Projected != nil:
			files, err = projectedFiles(ctx, refs, info, v.Projected)
		default:
			skipped = append(skipped, v.Name)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("preparing volume %s: %w", v.Name, err)
		}
		if err := writeVolume(path, files); err != nil {
			return nil, nil, fmt.Errorf("writing volume %s: %w", v.Name, err)
		}
		paths[v.Name] = path
	}
	return paths, skipped, nil
}

type volumeFile struct {
	data []byte
	mode os.FileMode
}

func writeVolume(dir string, files map[string]volumeFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for rel, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+rel)) // the API forbids "..", Clean keeps it that way
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func fileMode(mode *int32, def *int32) os.FileMode {
	switch {
	case mode != nil:
		return os.FileMode(*mode)
	case def != nil:
		return os.FileMode(*def)
	}
	return 0o644
}

// keyFiles turns data into files: every key when items is empty, else the
// listed keys at their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, optional bool, defMode *int32, what string) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{data: v, mode: fileMode(nil, defMode)}
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, configErrorf("couldn't find key %s in %s", it.Key, what)
		}
		files[it.Path] = volumeFile{data: v, mode: fileMode(it.Mode, defMode)}
	}
	return files, nil
}

func secretFiles(ctx context.Context, refs *podRefs, name string, items []corev1.KeyToPath, optional *bool, defMode *int32) (map[string]volumeFile, error) {
	s, err := refs.secret(ctx, name)
	if err != nil {
		return nil, err
	}
	opt := optional != nil && *optional
	if s == nil {
		if opt {
			return nil, nil
		}
		return nil, configErrorf("secret %q not found", name)
	}
	return keyFiles(s.Data, items, opt, defMode, "Secret "+refs.namespace+"/"+name)
}

func configMapFiles(ctx context.Context, refs *podRefs, name string, items []corev1.KeyToPath, optional *bool, defMode *int32) (map[string]volumeFile, error) {
	c, err := refs.configMap(ctx, name)
	if err != nil {
		return nil, err
	}
	opt := optional != nil && *optional
	if c == nil {
		if opt {
			return nil, nil
		}
		return nil, configErrorf("configmap %q not found", name)
	}
	data := make(map[string][]byte, len(c.Data)+len(c.BinaryData))
	for k, v := range c.Data {
		data[k] = []byte(v)
	}
	for k, v := range c.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, opt, defMode, "ConfigMap "+refs.namespace+"/"+name)
}

func downwardFiles(info *podInfo, items []corev1.DownwardAPIVolumeFile, defMode *int32) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = info.fieldValue(it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = info.resourceValue(it.ResourceFieldRef, &corev1.Container{})
		}
		if err != nil {
			return nil, err
		}
		files[it.Path] = volumeFile{data: []byte(v), mode: fileMode(it.Mode, defMode)}
	}
	return files, nil
}

func projectedFiles(ctx context.Context, refs *podRefs, info *podInfo, p *corev1.ProjectedVolumeSource) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	for _, src := range p.Sources {
		var part map[string]volumeFile
		var err error
		switch {
		case src.Secret != nil:
			part, err = secretFiles(ctx, refs, src.Secret.Name, src.Secret.Items, src.Secret.Optional, p.DefaultMode)
		case src.ConfigMap != nil:
			part, err = configMapFiles(ctx, refs, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, p.DefaultMode)
		case src.DownwardAPI != nil:
			part, err = downwardFiles(info, src.DownwardAPI.Items, p.DefaultMode)
		case src.ServiceAccountToken != nil:
			part, err = tokenFile(ctx, refs, info.pod, src.ServiceAccountToken, p.DefaultMode)
		}
		if err != nil {
			return nil, err
		}
		for k, v := range part {
			files[k] = v
		}
	}
	return files, nil
}

// tokenFile requests a token bound to the pod for its service account, as
// the kubelet does for projected token volumes. It is not rotated: the API
// server extends the default kube-api-access tokens to a year.
func tokenFile(ctx context.Context, refs *podRefs, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, defMode *int32) (map[string]volumeFile, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := refs.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return map[string]volumeFile{src.Path: {data: []byte(tr.Status.Token), mode: fileMode(nil, defMode)}}, nil
}
