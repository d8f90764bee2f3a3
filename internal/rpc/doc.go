// Package rpc wires drover's gRPC services: server and client options with
// keepalive and message-size limits, and authentication of every connection
// with the application's secret when spark.authenticate is true. The same
// Auth secures the driver↔executor control stream, which is not gRPC (the
// ctl subpackage): ServerHandshake, ClientHandshake and Proof are its side
// of the handshakes. With mutual TLS the role in the peer's certificate is
// checked too: per call on gRPC (only the driver fetches results, either
// role fetches blocks), and in the handshake on the control stream (only
// executors dial it, and they accept only the driver, which signs each
// such connection with its key: a resumed handshake proves only the
// session's secret, which executors share). A shared secret cannot tell
// roles apart. The messages live in the pb subpackage
// (generated, committed).
package rpc
