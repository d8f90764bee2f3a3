package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DroverApplication is one drover application in cluster mode: what
// `drover submit --deploy-mode cluster` would run, kept as an object that a
// controller submits, follows, retries and cleans up.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=droverapplications,singular=droverapplication,shortName=droverapp;droverapps,categories=drover
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Executors",type=integer,JSONPath=`.status.executors.running`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="UI",type=string,JSONPath=`.status.uiAddress`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.driverPod`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
type DroverApplication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DroverApplicationSpec   `json:"spec"`
	Status DroverApplicationStatus `json:"status,omitempty"`
}

// DroverApplicationList is a list of DroverApplications.
//
// +kubebuilder:object:root=true
type DroverApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DroverApplication `json:"items"`
}

// DroverApplicationSpec is what drover submit takes. Each field sets the
// configuration key its comment names (see Conf); sparkConf sets any other.
// The rules below are the checks of drover submit that the API server can
// make itself: sparkConf values of well-known keys are checked as
// config.Load checks them (TestOperatorConfMirror compares the two).
//
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.executor.memory' in self.sparkConf) || self.sparkConf['spark.executor.memory'].matches('(?i)^ *[0-9]+(b|[kmgtp]b?)? *$')",message="must be a size such as 512m, 2g or 1024k (units b, k, m, g, t, p; bare numbers are MiB)",fieldPath=".sparkConf['spark.executor.memory']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.executor.memoryOverhead' in self.sparkConf) || self.sparkConf['spark.executor.memoryOverhead'].matches('(?i)^ *[0-9]+(b|[kmgtp]b?)? *$')",message="must be a size such as 512m, 2g or 1024k (units b, k, m, g, t, p; bare numbers are MiB)",fieldPath=".sparkConf['spark.executor.memoryOverhead']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.driver.memory' in self.sparkConf) || self.sparkConf['spark.driver.memory'].matches('(?i)^ *[0-9]+(b|[kmgtp]b?)? *$')",message="must be a size such as 512m, 2g or 1024k (units b, k, m, g, t, p; bare numbers are MiB)",fieldPath=".sparkConf['spark.driver.memory']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.driver.memoryOverhead' in self.sparkConf) || self.sparkConf['spark.driver.memoryOverhead'].matches('(?i)^ *[0-9]+(b|[kmgtp]b?)? *$')",message="must be a size such as 512m, 2g or 1024k (units b, k, m, g, t, p; bare numbers are MiB)",fieldPath=".sparkConf['spark.driver.memoryOverhead']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.executor.instances' in self.sparkConf) || (self.sparkConf['spark.executor.instances'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.executor.instances'].trim()) <= 2147483647)",message="must be an integer ≥ 0",fieldPath=".sparkConf['spark.executor.instances']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.executor.cores' in self.sparkConf) || (self.sparkConf['spark.executor.cores'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.executor.cores'].trim()) >= 1 && int(self.sparkConf['spark.executor.cores'].trim()) <= 2147483647)",message="must be an integer ≥ 1",fieldPath=".sparkConf['spark.executor.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.driver.cores' in self.sparkConf) || (self.sparkConf['spark.driver.cores'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.driver.cores'].trim()) >= 1 && int(self.sparkConf['spark.driver.cores'].trim()) <= 2147483647)",message="must be an integer ≥ 1",fieldPath=".sparkConf['spark.driver.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.task.maxFailures' in self.sparkConf) || (self.sparkConf['spark.task.maxFailures'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.task.maxFailures'].trim()) >= 1 && int(self.sparkConf['spark.task.maxFailures'].trim()) <= 2147483647)",message="must be an integer ≥ 1",fieldPath=".sparkConf['spark.task.maxFailures']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.dynamicAllocation.minExecutors' in self.sparkConf) || (self.sparkConf['spark.dynamicAllocation.minExecutors'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.dynamicAllocation.minExecutors'].trim()) <= 2147483647)",message="must be an integer ≥ 0",fieldPath=".sparkConf['spark.dynamicAllocation.minExecutors']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.dynamicAllocation.initialExecutors' in self.sparkConf) || (self.sparkConf['spark.dynamicAllocation.initialExecutors'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.dynamicAllocation.initialExecutors'].trim()) <= 2147483647)",message="must be an integer ≥ 0",fieldPath=".sparkConf['spark.dynamicAllocation.initialExecutors']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.dynamicAllocation.maxExecutors' in self.sparkConf) || (self.sparkConf['spark.dynamicAllocation.maxExecutors'].matches('(?i)^ *infinity *$') || (self.sparkConf['spark.dynamicAllocation.maxExecutors'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['spark.dynamicAllocation.maxExecutors'].trim()) <= 2147483647))",message="must be an integer ≥ 0 or infinity",fieldPath=".sparkConf['spark.dynamicAllocation.maxExecutors']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('drover.kubernetes.driver.maxRestarts' in self.sparkConf) || (self.sparkConf['drover.kubernetes.driver.maxRestarts'].matches('^ *[+]?[0-9]{1,10} *$') && int(self.sparkConf['drover.kubernetes.driver.maxRestarts'].trim()) <= 2147483647)",message="must be an integer ≥ 0",fieldPath=".sparkConf['drover.kubernetes.driver.maxRestarts']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.dynamicAllocation.enabled' in self.sparkConf) || self.sparkConf['spark.dynamicAllocation.enabled'].matches('(?i)^ *(true|false) *$')",message="must be true or false",fieldPath=".sparkConf['spark.dynamicAllocation.enabled']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.eventLog.enabled' in self.sparkConf) || self.sparkConf['spark.eventLog.enabled'].matches('(?i)^ *(true|false) *$')",message="must be true or false",fieldPath=".sparkConf['spark.eventLog.enabled']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.container.image.pullPolicy' in self.sparkConf) || self.sparkConf['spark.kubernetes.container.image.pullPolicy'].matches('(?i)^ *(Always|Never|IfNotPresent) *$')",message="must be one of Always, Never, IfNotPresent",fieldPath=".sparkConf['spark.kubernetes.container.image.pullPolicy']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.driver.restartPolicy' in self.sparkConf) || self.sparkConf['spark.kubernetes.driver.restartPolicy'].matches('(?i)^ *(Never|OnFailure) *$')",message="must be one of Never, OnFailure",fieldPath=".sparkConf['spark.kubernetes.driver.restartPolicy']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.driver.request.cores' in self.sparkConf) || (self.sparkConf['spark.kubernetes.driver.request.cores'].matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.sparkConf['spark.kubernetes.driver.request.cores'].matches('[1-9]'))",message="must be a CPU quantity > 0, such as 0.5, 500m or 2",fieldPath=".sparkConf['spark.kubernetes.driver.request.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.driver.limit.cores' in self.sparkConf) || (self.sparkConf['spark.kubernetes.driver.limit.cores'].matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.sparkConf['spark.kubernetes.driver.limit.cores'].matches('[1-9]'))",message="must be a CPU quantity > 0, such as 0.5, 500m or 2",fieldPath=".sparkConf['spark.kubernetes.driver.limit.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.executor.request.cores' in self.sparkConf) || (self.sparkConf['spark.kubernetes.executor.request.cores'].matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.sparkConf['spark.kubernetes.executor.request.cores'].matches('[1-9]'))",message="must be a CPU quantity > 0, such as 0.5, 500m or 2",fieldPath=".sparkConf['spark.kubernetes.executor.request.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('spark.kubernetes.executor.limit.cores' in self.sparkConf) || (self.sparkConf['spark.kubernetes.executor.limit.cores'].matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.sparkConf['spark.kubernetes.executor.limit.cores'].matches('[1-9]'))",message="must be a CPU quantity > 0, such as 0.5, 500m or 2",fieldPath=".sparkConf['spark.kubernetes.executor.limit.cores']"
// +kubebuilder:validation:XValidation:rule="!has(self.sparkConf) || !('drover.kubernetes.queue' in self.sparkConf) || (size(self.sparkConf['drover.kubernetes.queue']) <= 63 && self.sparkConf['drover.kubernetes.queue'].matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))",message="must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",fieldPath=".sparkConf['drover.kubernetes.queue']"
type DroverApplicationSpec struct {
	// Image of the driver and executor pods (spark.kubernetes.container.image).
	// Unset, sparkConf's spark.kubernetes.{driver,executor}.container.image
	// or the pod templates' containers name the images.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of both (spark.kubernetes.container.image.pullPolicy).
	// +optional
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// MainApplicationFile is the binary's path in the image,
	// local:///app/wordcount (or /app/wordcount): drover runs the image's
	// copy and uploads nothing.
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.matches('^(local://)?/[^/]')",message="must be local:///path/in/the/image or an absolute path: drover uploads no files (s3://, file:// and relative paths are refused)"
	MainApplicationFile string `json:"mainApplicationFile"`

	// Arguments are the application's own arguments.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=16384
	Arguments []string `json:"arguments,omitempty"`

	// SparkConf is any other configuration, as --conf key=value pairs.
	// Keys the controller decides (master, namespace, application id, pod
	// names, local files) are refused; values of well-known keys are
	// checked as drover submit checks them.
	// +optional
	// +kubebuilder:validation:MaxProperties=512
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.startsWith('spark.') || k.startsWith('drover.'))",messageExpression="'key ' + self.filter(k, !(k.startsWith('spark.') || k.startsWith('drover.')))[0] + ' is neither spark.* nor drover.*: drover would ignore it'"
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['spark.master', 'spark.submit.deployMode', 'spark.app.id', 'spark.kubernetes.namespace', 'spark.kubernetes.driver.pod.name', 'spark.kubernetes.submission.waitAppCompletion', 'spark.kubernetes.driver.podTemplateFile', 'spark.kubernetes.executor.podTemplateFile', 'spark.kubernetes.scheduler.volcano.podGroupTemplateFile', 'spark.kubernetes.context', 'spark.kubernetes.apiserver.host', 'spark.driver.host'] || k.startsWith('spark.kubernetes.authenticate.submission.'))",messageExpression="'key ' + self.filter(k, k in ['spark.master', 'spark.submit.deployMode', 'spark.app.id', 'spark.kubernetes.namespace', 'spark.kubernetes.driver.pod.name', 'spark.kubernetes.submission.waitAppCompletion', 'spark.kubernetes.driver.podTemplateFile', 'spark.kubernetes.executor.podTemplateFile', 'spark.kubernetes.scheduler.volcano.podGroupTemplateFile', 'spark.kubernetes.context', 'spark.kubernetes.apiserver.host', 'spark.driver.host'] || k.startsWith('spark.kubernetes.authenticate.submission.'))[0] + ' is the controller\\'s (the object\\'s namespace, the cluster it runs in, spec.driver.podTemplate and spec.executor.podTemplate): remove it'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 16384)",message="values are at most 16384 characters"
	SparkConf map[string]string `json:"sparkConf,omitempty"`

	// Driver is the driver pod.
	// +optional
	Driver DriverSpec `json:"driver,omitempty"`

	// Executor is the executor pods.
	// +optional
	Executor ExecutorSpec `json:"executor,omitempty"`

	// DynamicAllocation scales the executors with the load
	// (spark.dynamicAllocation.*).
	// +optional
	DynamicAllocation *DynamicAllocation `json:"dynamicAllocation,omitempty"`

	// RestartPolicy is the controller's: whether a failed application is
	// submitted again, as a new driver pod. A driver restarted in its own
	// pod is spark.kubernetes.driver.restartPolicy, in sparkConf.
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// Queue holds the application's pods until the cluster admits them
	// (drover.kubernetes.queue): a Kueue LocalQueue, or a Volcano or
	// YuniKorn queue with their scheduler.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="must be a label value: letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Queue string `json:"queue,omitempty"`

	// TimeToLiveSeconds deletes the object (and so its driver pod) this
	// long after the application ended. Unset keeps it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TimeToLiveSeconds *int64 `json:"timeToLiveSeconds,omitempty"`

	// Suspend holds the application: nothing is submitted while it is true,
	// and a running one is stopped (its driver pod deleted). Kueue's job
	// integration sets and clears it.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
}

// RoleSpec is what driver and executor pods share.
type RoleSpec struct {
	// Cores of the process (spark.driver.cores, spark.executor.cores): the
	// pod's CPU request unless coreRequest is set.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Cores *int32 `json:"cores,omitempty"`

	// CoreRequest is the pod's CPU request as a quantity, 500m or 0.5
	// (spark.kubernetes.{driver,executor}.request.cores).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.matches('[1-9]')",message="must be a CPU quantity > 0, such as 0.5, 500m or 2"
	CoreRequest string `json:"coreRequest,omitempty"`

	// CoreLimit is the pod's CPU limit as a quantity
	// (spark.kubernetes.{driver,executor}.limit.cores).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]*)?|[.][0-9]+)m?$') && self.matches('[1-9]')",message="must be a CPU quantity > 0, such as 0.5, 500m or 2"
	CoreLimit string `json:"coreLimit,omitempty"`

	// Memory of the process, a size such as 512m or 2g; bare numbers are
	// MiB (spark.driver.memory, spark.executor.memory).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('(?i)^[0-9]*[1-9][0-9]*(b|[kmgtp]b?)?$')",message="must be a size > 0 such as 512m, 2g or 1024k (units b, k, m, g, t, p; bare numbers are MiB)"
	Memory string `json:"memory,omitempty"`

	// MemoryOverhead is the pod's memory beyond the process's, a size
	// (spark.driver.memoryOverhead, spark.executor.memoryOverhead).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('(?i)^[0-9]+(b|[kmgtp]b?)?$')",message="must be a size such as 384m or 1g (units b, k, m, g, t, p; bare numbers are MiB)"
	MemoryOverhead string `json:"memoryOverhead,omitempty"`

	// ServiceAccount of the pods
	// (spark.kubernetes.authenticate.{driver,executor}.serviceAccountName).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'"
	ServiceAccount string `json:"serviceAccount,omitempty"`

	// PodTemplate is the pod the role's pods are built on, as
	// spark.kubernetes.{driver,executor}.podTemplateFile would hold; drover's
	// settings are added to it.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// DriverSpec is the driver pod.
type DriverSpec struct {
	RoleSpec `json:",inline"`
}

// ExecutorSpec is the executor pods.
type ExecutorSpec struct {
	RoleSpec `json:",inline"`

	// Instances is the number of executors with static allocation
	// (spark.executor.instances).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Instances *int32 `json:"instances,omitempty"`
}

// DynamicAllocation is spark.dynamicAllocation.*.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minExecutors) || !has(self.maxExecutors) || self.minExecutors <= self.maxExecutors",message="minExecutors must be ≤ maxExecutors",fieldPath=".minExecutors"
// +kubebuilder:validation:XValidation:rule="!has(self.initialExecutors) || !has(self.minExecutors) || self.minExecutors <= self.initialExecutors",message="initialExecutors must be ≥ minExecutors",fieldPath=".initialExecutors"
// +kubebuilder:validation:XValidation:rule="!has(self.initialExecutors) || !has(self.maxExecutors) || self.initialExecutors <= self.maxExecutors",message="initialExecutors must be ≤ maxExecutors",fieldPath=".initialExecutors"
type DynamicAllocation struct {
	// Enabled turns dynamic allocation on (spark.dynamicAllocation.enabled).
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// InitialExecutors (spark.dynamicAllocation.initialExecutors).
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialExecutors *int32 `json:"initialExecutors,omitempty"`
	// MinExecutors (spark.dynamicAllocation.minExecutors).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinExecutors *int32 `json:"minExecutors,omitempty"`
	// MaxExecutors (spark.dynamicAllocation.maxExecutors).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxExecutors *int32 `json:"maxExecutors,omitempty"`
}

// RestartPolicyType says when the controller submits a failed application
// again.
// +kubebuilder:validation:Enum=Never;OnFailure
type RestartPolicyType string

// Restart policies, as spark-operator's.
const (
	RestartNever     RestartPolicyType = "Never"
	RestartOnFailure RestartPolicyType = "OnFailure"
)

// RestartPolicy is spark-operator's: with OnFailure, an application whose
// driver failed is submitted again after OnFailureRetryInterval, up to
// OnFailureRetries times; one that could not be submitted (the API server
// refused the driver's objects) after OnSubmissionFailureRetryInterval, up
// to OnSubmissionFailureRetries times.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'OnFailure' || (!has(self.onFailureRetries) && !has(self.onSubmissionFailureRetries))",message="retries need type OnFailure",fieldPath=".type"
type RestartPolicy struct {
	// Type is Never (the default) or OnFailure.
	// +optional
	// +kubebuilder:default=Never
	Type RestartPolicyType `json:"type,omitempty"`
	// OnFailureRetries after a failed run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OnFailureRetries *int32 `json:"onFailureRetries,omitempty"`
	// OnFailureRetryInterval in seconds before such a retry.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OnFailureRetryInterval *int64 `json:"onFailureRetryInterval,omitempty"`
	// OnSubmissionFailureRetries after a failed submission.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OnSubmissionFailureRetries *int32 `json:"onSubmissionFailureRetries,omitempty"`
	// OnSubmissionFailureRetryInterval in seconds before such a retry.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OnSubmissionFailureRetryInterval *int64 `json:"onSubmissionFailureRetryInterval,omitempty"`
}
