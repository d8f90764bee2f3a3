// Package rpc wires drover's gRPC services: server and client options with
// keepalive and message-size limits, and authentication of every connection
// with the application's secret when spark.authenticate is true. The
// protocol itself lives in the pb subpackage (generated, committed).
package rpc
