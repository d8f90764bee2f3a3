package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScheduledDroverApplication creates a DroverApplication from its template
// on a cron schedule, as a CronJob creates Jobs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=scheduleddroverapplications,singular=scheduleddroverapplication,shortName=sdroverapp;sdroverapps,categories=drover
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Run",type=string,JSONPath=`.status.lastRunName`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScheduledDroverApplication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScheduledDroverApplicationSpec   `json:"spec"`
	Status ScheduledDroverApplicationStatus `json:"status,omitempty"`
}

// ScheduledDroverApplicationList is a list of ScheduledDroverApplications.
//
// +kubebuilder:object:root=true
type ScheduledDroverApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScheduledDroverApplication `json:"items"`
}

// ConcurrencyPolicy says what a due run does while an earlier one is not
// finished, as a CronJob's.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

// Concurrency policies.
const (
	// ConcurrencyAllow starts the run anyway.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid skips the run.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace deletes the running application and starts the run.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// ScheduledDroverApplicationSpec is when to run what.
type ScheduledDroverApplicationSpec struct {
	// Schedule in cron format: five fields (minute hour day-of-month month
	// day-of-week) or a macro such as @hourly or @daily.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || self.matches('^ *[0-9A-Za-z*?,/-]+( +[0-9A-Za-z*?,/-]+){4} *$')",message="must be five cron fields (minute hour day-of-month month day-of-week, such as '0 3 * * *') or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"
	Schedule string `json:"schedule"`

	// TimeZone of the schedule, an IANA name such as Europe/Paris; unset
	// means the controller's (UTC in its image).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][-A-Za-z0-9_+]*(/[A-Za-z0-9][-A-Za-z0-9_+]*)*$')",message="must be an IANA time zone name such as UTC or Europe/Paris"
	TimeZone *string `json:"timeZone,omitempty"`

	// Suspend stops creating runs; those already created go on.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ConcurrencyPolicy is Allow (the default), Forbid or Replace.
	// +optional
	// +kubebuilder:default=Allow
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// SuccessfulRunHistoryLimit is how many succeeded runs are kept
	// (default 3).
	// +optional
	// +kubebuilder:validation:Minimum=0
	SuccessfulRunHistoryLimit *int32 `json:"successfulRunHistoryLimit,omitempty"`

	// FailedRunHistoryLimit is how many failed runs are kept (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedRunHistoryLimit *int32 `json:"failedRunHistoryLimit,omitempty"`

	// Template is the spec of each run's DroverApplication.
	Template DroverApplicationSpec `json:"template"`
}

// ScheduledDroverApplicationStatus is what the controller observed.
type ScheduledDroverApplicationStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is when the last run was due.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the next run is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastRunName is the DroverApplication of the last run.
	// +optional
	LastRunName string `json:"lastRunName,omitempty"`
	// Active are the runs not yet in a final state.
	// +optional
	// +listType=set
	Active []string `json:"active,omitempty"`
	// PastSuccessfulRunNames and PastFailedRunNames are the runs kept, newest
	// first.
	// +optional
	PastSuccessfulRunNames []string `json:"pastSuccessfulRunNames,omitempty"`
	// +optional
	PastFailedRunNames []string `json:"pastFailedRunNames,omitempty"`
	// Conditions, such as a schedule the controller could not parse.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
