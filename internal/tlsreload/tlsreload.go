// Package tlsreload serves TLS from certificate, key and client CA files
// that are replaced while the server runs (cert-manager and OpenShift's
// service CA rotate the Secret, the kubelet swaps the mounted files). It
// wraps k8s.io/apiserver's dynamiccertificates, which watches the files
// and swaps the tls.Config new connections get: open connections keep
// theirs, so a rotation fails no request.
//
// dynamiccertificates rather than controller-runtime's certwatcher: it
// also reloads the client CA, and adds fewer packages to the binary.
package tlsreload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
)

// ErrConfig is returned for files that cannot be served.
var ErrConfig = errors.New("tls configuration")

// Files names the PEM files to serve. ClientCA is optional: with it,
// client certificates signed by it are verified when offered (see
// RequireClientCert).
type Files struct {
	Cert, Key, ClientCA string
}

// Reloader keeps a tls.Config current with the files.
type Reloader struct {
	cert *dynamiccertificates.DynamicCertKeyPairContent
	ca   *dynamiccertificates.DynamicFileCAContent
	ctrl *dynamiccertificates.DynamicServingCertificateController
	base *tls.Config
}

// New loads the files once, so a bad certificate fails at start rather
// than at the first handshake.
// Each of configure adjusts the config every handshake starts from (the
// versions and cipher suites offered).
func New(f Files, configure ...func(*tls.Config)) (*Reloader, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("%w: a certificate needs its key and a key its certificate", ErrConfig)
	}
	r := &Reloader{base: &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}}
	for _, c := range configure {
		c(r.base)
	}
	var err error
	if r.cert, err = dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", f.Cert, f.Key); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var ca dynamiccertificates.CAContentProvider
	if f.ClientCA != "" {
		if r.ca, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca", f.ClientCA); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		ca = r.ca
		// Content stays readable without a certificate; RequireClientCert
		// guards the rest.
		r.base.ClientAuth = tls.VerifyClientCertIfGiven
	}
	r.ctrl = dynamiccertificates.NewDynamicServingCertificateController(r.base, ca, r.cert, nil, nil)
	r.cert.AddListener(r.ctrl)
	if r.ca != nil {
		r.ca.AddListener(r.ctrl)
	}
	if err := r.ctrl.RunOnce(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return r, nil
}

// LogTo sends the messages of dynamiccertificates (klog, process-wide) to
// log, so reloads show in the service's own log.
func LogTo(log *slog.Logger) { klog.SetSlogLogger(log) }

// TLSConfig is the config to serve with: each handshake gets the newest
// certificate and client CA.
func (r *Reloader) TLSConfig() *tls.Config {
	c := r.base.Clone()
	c.GetConfigForClient = r.ctrl.GetConfigForClient
	return c
}

// Run watches the files until ctx ends.
func (r *Reloader) Run(ctx context.Context) {
	go r.cert.Run(ctx, 1)
	if r.ca != nil {
		go r.ca.Run(ctx, 1)
	}
	r.ctrl.Run(1, ctx.Done())
}

// RequireClientCert answers 401 to requests that came without a verified
// client certificate, unless open says they need none.
func RequireClientCert(open func(*http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if (req.TLS == nil || len(req.TLS.VerifiedChains) == 0) && !open(req) {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"a client certificate signed by the configured client CA is required"}`+"\n")
				return
			}
			next.ServeHTTP(w, req)
		})
	}
}
