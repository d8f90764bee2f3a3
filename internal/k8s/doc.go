// Package k8s is the Kubernetes cluster manager: the only part of drover,
// with the CLI and the test environment, that talks to the Kubernetes API.
// Its subpackages build executor pods (podspec), classify pod states
// (snapshot), create and delete the pods (podcontrol), decide how many to
// create or delete (allocator), turn pod states into executor removals with
// reasons (lifecycle) and submit applications (submit).
package k8s
