// Package tlsreload serves TLS from certificate, key and client CA files
// that are replaced while the server runs (cert-manager and OpenShift's
// service CA rotate the Secret, the kubelet swaps the mounted files).
//
// Each handshake stats the files (a few microseconds, against the
// handshake's hundreds) and, when one changed, reads them again and swaps
// what new connections get: open connections keep theirs, so a rotation
// fails no request. Files that do not load (a half-written file, a key
// that does not match its certificate yet) leave the previous ones in
// use, and are reported once per change. Only the standard library:
// k8s.io/apiserver's reloader did the same with about 230 more packages.
package tlsreload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrConfig is returned for files that cannot be served.
var ErrConfig = errors.New("tls configuration")

// checkEvery is how often Run looks at the files between handshakes, so
// a rotation (or a bad file) shows in the log of an idle server too.
const checkEvery = 30 * time.Second

// logger receives the reload messages of every Reloader (see LogTo).
var logger atomic.Pointer[slog.Logger]

// Files names the PEM files to serve. ClientCA is optional: with it,
// client certificates signed by it are verified when offered (see
// RequireClientCert).
type Files struct {
	Cert, Key, ClientCA string
}

// Reloader keeps a tls.Config current with the files.
type Reloader struct {
	files Files
	base  *tls.Config
	mu    sync.Mutex // one reload at a time
	cur   atomic.Pointer[loaded]
}

// loaded is what new connections get, and the files as last read (read
// or not: a file that failed is not read again until it changes).
type loaded struct {
	certs    []tls.Certificate
	clientCA *x509.CertPool
	pairSeen [2]os.FileInfo
	caSeen   os.FileInfo
}

// New loads the files once, so a bad certificate fails at start rather
// than at the first handshake.
// Each of configure adjusts the config every handshake starts from (the
// versions and cipher suites offered).
func New(f Files, configure ...func(*tls.Config)) (*Reloader, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("%w: a certificate needs its key and a key its certificate", ErrConfig)
	}
	r := &Reloader{files: f, base: &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}}
	for _, c := range configure {
		c(r.base)
	}
	l := &loaded{pairSeen: [2]os.FileInfo{stat(f.Cert), stat(f.Key)}}
	pair, err := loadPair(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	l.certs = []tls.Certificate{pair}
	if f.ClientCA != "" {
		l.caSeen = stat(f.ClientCA)
		if l.clientCA, err = loadCA(f.ClientCA); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		// Content stays readable without a certificate; RequireClientCert
		// guards the rest.
		r.base.ClientAuth = tls.VerifyClientCertIfGiven
	}
	r.cur.Store(l)
	return r, nil
}

// LogTo sends the reload messages of every Reloader to log.
func LogTo(log *slog.Logger) { logger.Store(log) }

func logTo() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// TLSConfig is the config to serve with: each handshake gets the newest
// certificate and client CA, with the settings of the returned config as
// they are at that handshake (a caller may set versions or ciphers on it
// before serving).
func (r *Reloader) TLSConfig() *tls.Config {
	c := r.base.Clone()
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		l := r.current()
		h := c.Clone()
		h.GetConfigForClient = nil
		h.Certificates, h.ClientCAs = l.certs, l.clientCA
		return h, nil
	}
	return c
}

// Run looks at the files now and then until ctx ends; handshakes look
// at them anyway.
func (r *Reloader) Run(ctx context.Context) {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.current()
		}
	}
}

// current reloads what changed since it was last read and returns what
// new connections get.
func (r *Reloader) current() *loaded {
	l := r.cur.Load()
	if !r.changed(l) {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l = r.cur.Load()
	n := *l
	// Stat before reading: a change while reading shows at the next look.
	if pair := [2]os.FileInfo{stat(r.files.Cert), stat(r.files.Key)}; !same(pair[0], l.pairSeen[0]) || !same(pair[1], l.pairSeen[1]) {
		n.pairSeen = pair
		if c, err := loadPair(r.files); err != nil {
			logTo().Warn("TLS certificate not reloaded; serving the previous one until the files change again", "cert", r.files.Cert, "err", err)
		} else {
			n.certs = []tls.Certificate{c}
			logTo().Info("TLS certificate reloaded", "cert", r.files.Cert, "not_after", c.Leaf.NotAfter)
		}
	}
	if ca := stat(r.files.ClientCA); r.files.ClientCA != "" && !same(ca, l.caSeen) {
		n.caSeen = ca
		if p, err := loadCA(r.files.ClientCA); err != nil {
			logTo().Warn("TLS client CA not reloaded; verifying with the previous one until the file changes again", "ca", r.files.ClientCA, "err", err)
		} else {
			n.clientCA = p
			logTo().Info("TLS client CA reloaded", "ca", r.files.ClientCA)
		}
	}
	r.cur.Store(&n)
	return &n
}

// changed says whether a file differs from when l read it.
func (r *Reloader) changed(l *loaded) bool {
	return !same(stat(r.files.Cert), l.pairSeen[0]) || !same(stat(r.files.Key), l.pairSeen[1]) ||
		(r.files.ClientCA != "" && !same(stat(r.files.ClientCA), l.caSeen))
}

// stat follows symbolic links, as the kubelet's Secret volumes are
// links swapped to a new directory. A missing file is nil.
func stat(path string) os.FileInfo {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

// same says whether a and b are the same file, unchanged.
func same(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// loadPair reads the certificate chain and its key.
func loadPair(f Files) (tls.Certificate, error) {
	c, err := readPEM(f.Cert)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := readPEM(f.Key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(c, k)
}

// loadCA reads a PEM bundle of CA certificates.
func loadCA(path string) (*x509.CertPool, error) {
	b, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if blk.Type != "CERTIFICATE" || err != nil {
			return nil, fmt.Errorf("%s: a %q block that is no certificate", path, blk.Type)
		}
		p.AddCert(c)
	}
	if p.Equal(x509.NewCertPool()) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return p, nil
}

// readPEM reads a PEM file whole: the standard library skips a block cut
// short, so a file still being written could load with a link of its
// chain or a CA missing.
func readPEM(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rest := b
	for blk := (*pem.Block)(nil); ; {
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s: not PEM, or cut short", path)
	}
	return b, nil
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
