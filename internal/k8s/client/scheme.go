package client

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// schemeCheck turns the two ways a wrong scheme in the master URL fails
// into one error that names the fix: https:// to a plain-HTTP server (Go's
// TLS client says "server gave HTTP response to HTTPS client"), and
// http:// to a TLS server, which answers 400 with a body client-go would
// report as "the server rejected our request for an unknown reason".
type schemeCheck struct {
	next   http.RoundTripper
	server string
}

// tlsOnlyBody is what Go's TLS servers (kube-apiserver) answer to plain
// HTTP.
const tlsOnlyBody = "Client sent an HTTP request to an HTTPS server"

func (s schemeCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		var rhe tls.RecordHeaderError
		if req.URL.Scheme == "https" && errors.As(err, &rhe) && string(rhe.RecordHeader[:]) == "HTTP/" {
			return nil, fmt.Errorf("the API server %s speaks plain HTTP, not TLS: use k8s://http://%s (or fix the kubeconfig's server): %w",
				s.server, req.URL.Host, err)
		}
		return nil, err
	}
	if req.URL.Scheme == "http" && resp.StatusCode == http.StatusBadRequest {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if rerr == nil && bytes.Contains(body, []byte(tlsOnlyBody)) {
			return nil, fmt.Errorf("the API server %s expects TLS: use k8s://https://%s (or fix the kubeconfig's server)", s.server, req.URL.Host)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}
