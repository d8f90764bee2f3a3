// Package appimage builds drover's application image without Docker: the
// static application binary on a small base the project makes, as an image
// (go-containerregistry's v1.Image) written as a docker-archive tarball that
// `ctr images import` and `docker load` read, or as a plain root file system
// directory, which the repository's Dockerfile copies into a scratch image.
// Both come from one Spec, so `make image` and `docker build` give the same
// file system (TestDockerfileMatchesBuilder runs the Dockerfile's steps on
// the host and compares).
//
// # The image
//
// Two layers. The base (Base): /etc/passwd and /etc/group with root, nobody
// and nonroot (65532), /etc/nsswitch.conf, the CA certificates of Debian's
// ca-certificates package at /etc/ssl/certs/ca-certificates.crt (where Go's
// crypto/x509 looks first), /tmp (1777) and /home/nonroot (0700, owned by
// nonroot) — what distroless's static:nonroot gave before. The application
// (App): the binary at /app/<name>. The configuration: user 65532:65532 (a
// numeric user, which runAsNonRoot needs), working directory /home/nonroot,
// PATH=/app, and no entry point: drover's driver and executor pods name the
// binary as their command (local:///app/<name>).
//
// # Determinism
//
// Every timestamp is the Unix epoch, entries are sorted, and layers are
// gzipped by Go's compress/gzip, so the same binary gives the same image
// digest and, with one tag, the same tarball bytes.
package appimage
