package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Volume types of spark.kubernetes.executor.volumes.<type>.<name>.*.
const (
	VolumeHostPath = "hostPath"
	VolumeEmptyDir = "emptyDir"
	VolumePVC      = "persistentVolumeClaim"
	VolumeNFS      = "nfs"
)

// Volume is one user volume of the executor pods, parsed and checked from
// spark.kubernetes.executor.volumes.<type>.<name>.*.
type Volume struct {
	// Name is the volume's name in the pod (a DNS-1123 label).
	Name string
	// Type is one of VolumeHostPath, VolumeEmptyDir, VolumePVC, VolumeNFS.
	Type string
	// MountPath, SubPath, SubPathExpr and ReadOnly are the mount in the
	// executor container.
	MountPath, SubPath, SubPathExpr string
	ReadOnly                        bool
	// Source is the pod's volume source. For a claim, ClaimName may hold
	// ClaimExecutorID, replaced per executor; for an on-demand claim it is
	// replaced by the claim's name.
	Source corev1.VolumeSource
	// Claim is set for an on-demand claim (options.claimName=OnDemand): the
	// claim created with each executor pod.
	Claim *ClaimTemplate
}

// ClaimTemplate is what an on-demand PersistentVolumeClaim is made of.
type ClaimTemplate struct {
	StorageClass        string
	Size                resource.Quantity
	Labels, Annotations map[string]string
}
