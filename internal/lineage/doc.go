// Package lineage names datasets and shuffles by what they are computed
// from: registered function names, partitioning, and inputs with the
// versions the driver listed. Job, stage and dataset numbers are left out,
// because a driver that runs its program again from the start hands them
// out anew; a fingerprint is the same in every attempt of an application
// that computes the same thing, and differs as soon as anything it reads
// or does differs.
package lineage
