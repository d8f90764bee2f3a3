package k8sconf

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

var volumeTypes = []string{podspec.VolumeHostPath, podspec.VolumeEmptyDir, podspec.VolumePVC, podspec.VolumeNFS}

// options each volume type accepts (options.<name>).
var volumeOptions = map[string][]string{
	podspec.VolumeHostPath: {"path", "type"},
	podspec.VolumeEmptyDir: {"medium", "sizeLimit"},
	podspec.VolumePVC:      {"claimName", "storageClass", "sizeLimit"},
	podspec.VolumeNFS:      {"server", "path"},
}

var hostPathTypes = []string{"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}

// volumeSpec collects the properties of one volume while parsing.
type volumeSpec struct {
	typ, name           string
	mount, options      map[string]string
	labels, annotations map[string]string
	keyPrefix           string // spark.kubernetes.executor.volumes.<type>.<name>.
	unknown             []string
}

// parseVolumes parses the properties of a volume family (prefix is the
// family's prefix, such as "spark.kubernetes.executor.volumes.") into
// volumes sorted by name. Every problem is reported, each naming its key.
func parseVolumes(prefix string, values map[string]string) ([]podspec.Volume, error) {
	var errs []error
	specs := map[string]*volumeSpec{}
	for _, rest := range slices.Sorted(maps.Keys(values)) {
		key, value := prefix+rest, values[rest]
		parts := strings.SplitN(rest, ".", 3)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			errs = append(errs, fmt.Errorf("%s: expected %s<type>.<name>.<property>", key, prefix))
			continue
		}
		typ, name, prop := parts[0], parts[1], parts[2]
		if !slices.Contains(volumeTypes, typ) {
			errs = append(errs, fmt.Errorf("%s: unknown volume type %q: expected one of %s",
				key, typ, strings.Join(volumeTypes, ", ")))
			continue
		}
		s := specs[name]
		if s == nil {
			s = &volumeSpec{typ: typ, name: name, keyPrefix: prefix + typ + "." + name + ".",
				mount: map[string]string{}, options: map[string]string{}, labels: map[string]string{}, annotations: map[string]string{}}
			specs[name] = s
		} else if s.typ != typ {
			errs = append(errs, fmt.Errorf("%s: volume %q is already a %s volume; volume names must be unique", key, name, s.typ))
			continue
		}
		group, sub, _ := strings.Cut(prop, ".")
		switch {
		case sub == "":
			s.unknown = append(s.unknown, key)
		case group == "mount" && slices.Contains([]string{"path", "subPath", "subPathExpr", "readOnly"}, sub):
			s.mount[sub] = value
		case group == "options" && slices.Contains(volumeOptions[typ], sub):
			s.options[sub] = value
		case group == "label" && typ == podspec.VolumePVC:
			s.labels[sub] = value
		case group == "annotation" && typ == podspec.VolumePVC:
			s.annotations[sub] = value
		default:
			s.unknown = append(s.unknown, key)
		}
	}
	var vols []podspec.Volume
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		v, err := specs[name].volume()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vols = append(vols, v)
	}
	return vols, errors.Join(errs...)
}

func (s *volumeSpec) volume() (podspec.Volume, error) {
	var errs []error
	bad := func(prop, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", s.keyPrefix, prop, fmt.Sprintf(format, args...)))
	}
	for _, k := range s.unknown {
		errs = append(errs, fmt.Errorf("%s: unknown volume property: expected mount.{path,subPath,subPathExpr,readOnly}, "+
			"options.{%s}%s", k, strings.Join(volumeOptions[s.typ], ","),
			map[bool]string{true: ", label.<name> or annotation.<name>"}[s.typ == podspec.VolumePVC]))
	}
	if msgs := validation.IsDNS1123Label(s.name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s*: invalid volume name %q: %s", s.keyPrefix, s.name, strings.Join(msgs, "; ")))
	}
	v := podspec.Volume{Name: s.name, Type: s.typ, MountPath: s.mount["path"], SubPath: s.mount["subPath"], SubPathExpr: s.mount["subPathExpr"]}
	switch {
	case v.MountPath == "":
		bad("mount.path", "required")
	case !path.IsAbs(v.MountPath):
		bad("mount.path", "%q is not an absolute path", v.MountPath)
	}
	if v.SubPath != "" && v.SubPathExpr != "" {
		bad("mount.subPath", "mount.subPath and mount.subPathExpr are mutually exclusive")
	}
	if ro, ok := s.mount["readOnly"]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(ro))
		if err != nil {
			bad("mount.readOnly", "%q is not true or false", ro)
		}
		v.ReadOnly = b
	}
	quantity := func(opt string) *resource.Quantity {
		raw, ok := s.options[opt]
		if !ok {
			return nil
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(raw))
		if err != nil || q.Sign() <= 0 {
			bad("options."+opt, "%q is not a positive Kubernetes quantity such as 10Gi", raw)
			return nil
		}
		return &q
	}
	absPath := func(opt string) string {
		p := s.options[opt]
		switch {
		case p == "":
			bad("options."+opt, "required")
		case !path.IsAbs(p):
			bad("options."+opt, "%q is not an absolute path", p)
		}
		return p
	}
	switch s.typ {
	case podspec.VolumeHostPath:
		p := absPath("path")
		typ := s.options["type"]
		if !slices.Contains(hostPathTypes, typ) {
			bad("options.type", "%q: expected one of %s", typ, strings.Join(hostPathTypes[1:], ", "))
		}
		hp := &corev1.HostPathVolumeSource{Path: p}
		if typ != "" {
			t := corev1.HostPathType(typ)
			hp.Type = &t
		}
		v.Source.HostPath = hp
	case podspec.VolumeEmptyDir:
		medium := s.options["medium"]
		if medium != "" && medium != string(corev1.StorageMediumMemory) {
			bad("options.medium", "%q: expected Memory, or unset for the node's disk", medium)
		}
		v.Source.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(medium), SizeLimit: quantity("sizeLimit")}
	case podspec.VolumePVC:
		claim := s.options["claimName"]
		size := quantity("sizeLimit")
		switch {
		case claim == "":
			bad("options.claimName", "required: a claim's name, or %s", podspec.OnDemandClaim)
		case claim == podspec.OnDemandClaim:
			if size == nil && s.options["sizeLimit"] == "" {
				bad("options.sizeLimit", "required with options.claimName=%s", podspec.OnDemandClaim)
			}
			ct := &podspec.ClaimTemplate{StorageClass: s.options["storageClass"], Labels: s.labels, Annotations: s.annotations}
			if size != nil {
				ct.Size = *size
			}
			if ct.StorageClass != "" {
				if msgs := validation.IsDNS1123Subdomain(ct.StorageClass); len(msgs) > 0 {
					bad("options.storageClass", "%q: %s", ct.StorageClass, strings.Join(msgs, "; "))
				}
			}
			for k, val := range ct.Labels {
				checkLabel(s.keyPrefix+"label."+k, k, val, &errs)
			}
			for k := range ct.Annotations {
				if msgs := content.IsLabelKey(k); len(msgs) > 0 {
					errs = append(errs, fmt.Errorf("%sannotation.%s: invalid annotation name: %s", s.keyPrefix, k, strings.Join(msgs, "; ")))
				}
			}
			v.Claim = ct
		default:
			if msgs := validation.IsDNS1123Subdomain(strings.ReplaceAll(claim, podspec.ClaimExecutorID, "1")); len(msgs) > 0 {
				bad("options.claimName", "%q: %s", claim, strings.Join(msgs, "; "))
			}
			if len(s.labels)+len(s.annotations) > 0 {
				bad("label", "labels and annotations apply only to claims with options.claimName=%s", podspec.OnDemandClaim)
			}
		}
		v.Source.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: v.ReadOnly}
	case podspec.VolumeNFS:
		server := s.options["server"]
		if server == "" {
			bad("options.server", "required")
		}
		v.Source.NFS = &corev1.NFSVolumeSource{Server: server, Path: absPath("path"), ReadOnly: v.ReadOnly}
	}
	return v, errors.Join(errs...)
}

// checkLabel appends an error naming key when name=value is not a valid
// label.
func checkLabel(key, name, value string, errs *[]error) {
	if msgs := content.IsLabelKey(name); len(msgs) > 0 {
		*errs = append(*errs, fmt.Errorf("%s: invalid label name %q: %s", key, name, strings.Join(msgs, "; ")))
	}
	if msgs := content.IsLabelValue(value); len(msgs) > 0 {
		*errs = append(*errs, fmt.Errorf("%s: invalid label value %q: %s", key, value, strings.Join(msgs, "; ")))
	}
}

// checkHostVolumes refuses hostPath and nfs volumes unless
// drover.kubernetes.volumes.allowHostVolumes is true: they reach outside
// what Kubernetes controls and break the restricted Pod Security profile.
func (p *parser) checkHostVolumes(prefix string, vols []podspec.Volume) {
	if get(p, config.KubernetesAllowHostVolumes) {
		return
	}
	for _, v := range vols {
		if v.Type == podspec.VolumeHostPath || v.Type == podspec.VolumeNFS {
			p.fail("%s%s.%s: %s volumes reach outside what Kubernetes controls and break the restricted Pod Security profile; "+
				"set %s=true to use them", prefix, v.Type, v.Name, v.Type, config.KubernetesAllowHostVolumes.Key())
		}
	}
}
