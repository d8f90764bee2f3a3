// Package crds embeds the CustomResourceDefinitions of drover's operator,
// drover.io_droverapplications.yaml and
// drover.io_scheduleddroverapplications.yaml, as controller-gen writes
// them from the types of internal/operator/api/v1alpha1 (go generate
// there). Install them with kubectl apply -f, or from [FS].
//
// The schemas are structural, with CEL rules (x-kubernetes-validations)
// that make the API server refuse bad objects itself; the tests check that
// the schemas and the Go types name the same fields, and, against a real
// kube-apiserver (build tag integration), which objects are refused.
package crds
