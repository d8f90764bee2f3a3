package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is where a DroverApplication is, the State column of kubectl get.
type State string

// States of an application. The empty state is a new object the controller
// has not seen yet.
const (
	// StateSuspended: spec.suspend is true; nothing runs.
	StateSuspended State = "Suspended"
	// StateSubmitted: the driver's objects exist; the driver does not run yet.
	StateSubmitted State = "Submitted"
	// StateRunning: the driver runs.
	StateRunning State = "Running"
	// StateRetrying: the last attempt failed and another is due
	// (spec.restartPolicy).
	StateRetrying State = "Retrying"
	// StateSucceeded: the driver exited with 0. Final.
	StateSucceeded State = "Succeeded"
	// StateFailed: the application failed and no attempt is left. Final.
	StateFailed State = "Failed"
)

// Final reports whether s is an end state, after which only
// timeToLiveSeconds acts.
func (s State) Final() bool { return s == StateSucceeded || s == StateFailed }

// Condition types, metav1.Conditions in status.conditions.
const (
	ConditionSubmitted = "Submitted"
	ConditionRunning   = "Running"
	ConditionSucceeded = "Succeeded"
	ConditionFailed    = "Failed"
	ConditionSuspended = "Suspended"
)

// Condition reasons (CamelCase, as metav1.Condition requires).
const (
	// ReasonInvalidSpec: drover submit refused the spec (a check the API
	// server cannot make, such as a missing pod template container, or a
	// field and a sparkConf entry setting one key differently).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSubmissionFailed: the API server refused the driver's objects.
	ReasonSubmissionFailed = "SubmissionFailed"
	// ReasonSubmitted: the driver's objects were created.
	ReasonSubmitted = "Submitted"
	// ReasonDriverRunning: the driver container runs.
	ReasonDriverRunning = "DriverRunning"
	// ReasonDriverSucceeded: the driver exited with 0.
	ReasonDriverSucceeded = "DriverSucceeded"
	// ReasonDriverFailed: the driver exited with another code, or its pod
	// failed.
	ReasonDriverFailed = "DriverFailed"
	// ReasonDriverDeleted: the driver pod went away before it ended.
	ReasonDriverDeleted = "DriverDeleted"
	// ReasonRetriesExhausted: the last allowed attempt failed.
	ReasonRetriesExhausted = "RetriesExhausted"
	// ReasonSuspended and ReasonResumed follow spec.suspend.
	ReasonSuspended = "Suspended"
	ReasonResumed   = "Resumed"
)

// DroverApplicationStatus is what the controller observed.
type DroverApplicationStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// State is the summary (the State column).
	// +optional
	State State `json:"state,omitempty"`
	// Reason is the last transition's reason, one of the Reason constants.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains Reason: the error, or the end of a failed driver's log.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions are Submitted, Running, Succeeded, Failed and Suspended.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Attempts is how many times the application was submitted.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// AppID is the current attempt's application id (spark.app.id).
	// +optional
	AppID string `json:"appID,omitempty"`
	// DriverPod is the current attempt's driver pod, in the object's
	// namespace.
	// +optional
	DriverPod string `json:"driverPod,omitempty"`
	// UIAddress is where the driver's web UI answers while it runs.
	// +optional
	UIAddress string `json:"uiAddress,omitempty"`
	// Executors counts the current attempt's executor pods.
	// +optional
	Executors ExecutorCounts `json:"executors,omitempty"`
	// ExitCode is the driver's last exit code, when it ended.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// StartTime is when the first attempt was submitted.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the application reached a final state.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// ExecutorCounts are executor pods by state.
type ExecutorCounts struct {
	// Running executor pods.
	// +optional
	Running int32 `json:"running,omitempty"`
	// Pending executor pods: created, not running yet (or held by a queue).
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Failed executor pods of this attempt so far.
	// +optional
	Failed int32 `json:"failed,omitempty"`
}
