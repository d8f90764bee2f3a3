// Package executorid names executors the one way every part of the driver
// uses: the scheduler and the backend, dynamic allocation, the Kubernetes
// allocator and lifecycle manager, pod labels and names. Spark numbers its
// executors from 1 and calls the driver's own "driver"; ID keeps both, so
// ids are converted from and to text only where they cross a process
// boundary (the RPC, environment variables, pod labels).
package executorid
