// Package rpc wires drover's gRPC services: server and client options with
// keepalive and message-size limits, and authentication of every connection
// with the application's secret when spark.authenticate is true. The same
// Auth secures the driver↔executor control stream, which is not gRPC (the
// ctl subpackage): ServerHandshake, ClientHandshake and Proof are its side
// of the handshakes. The messages live in the pb subpackage (generated,
// committed).
package rpc
