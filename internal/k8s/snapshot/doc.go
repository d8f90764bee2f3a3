// Package snapshot classifies executor pods into the states the allocator
// and the lifecycle manager act on. Pod is what the driver keeps of each
// executor pod: the fields they read, a fifth of a trimmed corev1.Pod,
// made from a decoded pod (NewPod) or from its protobuf (DecodePod).
package snapshot
