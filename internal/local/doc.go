// Package local implements the two cluster managers that need no
// Kubernetes: local[N], where tasks run as goroutines of the driver process,
// and local-cluster[N,C,M], where N executor processes of the same binary
// register with the driver over loopback exactly as executor pods do.
package local
