// Package mtls gives each drover application its own certificate authority
// and the TLS 1.3 mutual-authentication configuration its connections use:
// the driver↔executor control stream (rpc/ctl), result fetch, and
// executor↔executor shuffle fetch (gRPC).
//
// Why a CA per application: a certificate then proves "I belong to this
// application" and nothing more, so a process of one application cannot talk
// to another application's driver or executors even on a shared cluster,
// without any cluster-wide PKI to run or trust.
//
// Why no stored CA key: the driver creates the [Authority] at start-up,
// issues its own [Bundle] and the one bundle all executors share, and then
// drops the Authority. The CA private key only ever lives in the driver's
// memory for that moment; what is stored (a Kubernetes Secret, an
// environment variable) is the CA certificate and leaf certificates with
// their keys. Nothing can issue a new certificate for the application
// afterwards, so a leaked bundle is bounded by the application's lifetime and
// the certificates' validity.
//
// What is verified, on both sides of every connection:
//   - TLS 1.3 only (MinVersion = MaxVersion), so there is no downgrade to
//     negotiate and the certificates are sent encrypted;
//   - the peer presents a certificate (a client without one is refused);
//   - the certificate chains to this application's CA and nothing else (the
//     system roots are never consulted), is within its validity period, and
//     allows the direction of use (client or server authentication);
//   - a server certificate names [ServerName]; pod IPs are not in
//     certificates, so the name is fixed rather than taken from the address;
//   - its URI SAN is drover://app/<appID>/<role> for this application;
//   - where the peer's role is fixed (the control stream: executors dial
//     the driver), that it is that role ([Loaded.Accepting]); elsewhere the
//     server checks the role per request ([PeerRole]).
//
// Executors resume a TLS session the driver prepared at start-up and put in
// their bundle, instead of a full handshake each (Loaded.PrepareSession):
// the certificates of that session are verified on every connection as
// above, and each still runs a fresh hybrid key exchange. Serving that
// session takes only its secret, which executors hold too, so on the
// control stream the driver also signs each connection's exported keying
// material with its key ([Loaded.SignChannel]), and executors check the
// signature against the driver's certificate ([Loaded.CheckChannel]).
//
// Every refusal the verification makes is reported through an onRefuse
// callback with the peer's address and the reason, so an operator can tell a
// misconfigured executor from a stranger. The package does not log; the
// caller decides how to report.
package mtls
