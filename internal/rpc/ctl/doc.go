// Package ctl is the transport of the driver↔executor control stream: one
// long-lived connection per executor carrying pb.ExecutorMessage up and
// pb.DriverMessage down, as the gRPC stream Driver.Control did.
//
// Why not gRPC: a driver holds one of these per executor, idle most of the
// time, and gRPC-go costs four goroutines (transport reader, writer,
// keep-alive, stream handler) and an HTTP/2 transport per connection: about
// 48 KiB per executor, most of the driver's memory at 10,000 executors, and
// a goroutine hand-off per message. Here a connection costs the driver one
// goroutine, which runs the handler; writes are made by whoever has a
// message to send, under the connection's write lock, so no goroutine waits
// to write and no timer runs per connection. On Linux that goroutine keeps
// a new goroutine's 2 KiB stack: it waits for the socket to be readable
// without reading it, and reading, decrypting and decoding a frame run on
// the server's worker goroutines (ServerStream.OffStack), as the handler's
// work should.
//
// The wire, after the security handshake:
//
//   - the client sends the preamble "DRVCTL1\n"; a client with no proof
//     to send (TLS, or no secret) sends it with its first message and reads
//     the hello before the first answer, a round trip sooner, while one that
//     proves a secret waits for the hello's nonce first;
//   - then each side sends frames: a uvarint header n<<1 | control, then n
//     bytes. A message frame (control 0) is one protobuf message; a control
//     frame's first byte says what it is: hello (server → client, first
//     frame, carrying the nonce the client must prove the secret for, if
//     any, or with TLS the driver's proof of its key, below; to a
//     pipelined client, in one write with the first answer),
//     proof (client → server), end (the sender sends no more, as a
//     gRPC half-close or an OK status) or error (server → client, the
//     stream's gRPC status code and message). Frames are at most
//     rpc.MaxMessageSize bytes (Options.MaxFrame).
//
// Bounded before trust: until a connection's first message (the executor's
// Register) is read, the peer is nobody, and the server reads frames of at
// most MaxFrameBeforeRegister (64 KiB; a proof's size while it waits for
// the proof), wants the handshake within HandshakeTimeout and the Register
// within RegisterTimeout of it, and lets one peer address have at most
// MaxPendingPerPeer such connections (more wait their turn, unread). The
// handler refuses a bad Register by ending the stream, so every later frame
// comes from a registered executor. On either side a frame's buffer grows
// with the bytes received, never to the size its header claims.
//
// Security is rpc.Auth's: with TLS, the connection is TLS 1.3 with mutual
// authentication by the application's certificates, refusals logged as for
// gRPC connections, and the hello carries the driver's ECDSA signature of
// the connection's exported keying material (rpc.Auth.ChannelProof), which
// the client checks against the driver's certificate before it takes
// anything from the stream (a pipelined client has sent its Register by
// then, nothing it would keep from another executor): executors resume a
// session whose secret they all hold, so the handshake alone does not
// prove the server is the driver (mtls's resume.go). A refused proof is
// Unauthenticated and recorded for rpc.Auth.Refused, so the executor
// stops. With a secret and no TLS, the client proves the secret with an
// HMAC of the server's fresh nonce (so a recorded connection cannot be
// replayed); otherwise the connection is plain. A client that does not
// speak TLS to a TLS server is told so in plaintext (Unauthenticated), and
// a TLS client of a plaintext server gets a TLS alert, so either side of a
// mismatch fails at once with a clear error instead of retrying.
//
// Dead peers: TCP keep-alive probes (KeepAlive) close a connection whose
// peer stopped answering, writes have a deadline, and the application's
// heartbeats, as before, remove an executor not heard from for
// spark.network.timeout.
package ctl
