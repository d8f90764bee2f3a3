package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the API.
const (
	Group   = "drover.io"
	Version = "v1alpha1"
)

// Kinds and resources, as the CRDs name them.
const (
	KindApplication               = "DroverApplication"
	KindScheduledApplication      = "ScheduledDroverApplication"
	ResourceApplications          = "droverapplications"
	ResourceScheduledApplications = "scheduleddroverapplications"
)

var (
	// GroupVersion is drover.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types to a scheme, such as controller-runtime's.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource is the group-qualified resource of a resource name, for errors.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&DroverApplication{}, &DroverApplicationList{},
		&ScheduledDroverApplication{}, &ScheduledDroverApplicationList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
