package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
)

// trust verifies registry TLS at each new connection: it dials, picks the
// host's CA pool (the system's, the global bundles, the host's CAFile) and
// handshakes. The files are stat'ed at every dial and the pool is built
// again when one changed, so a rotated CA is used from the next connection
// on without a goroutine per file. regclient cannot set TLS on a wrapped
// transport, so it is done here, beneath it.
type trust struct {
	files  []string // global CA bundles
	dirs   []string // global CA directories
	hosts  map[string]Host
	dialer *net.Dialer
	log    *slog.Logger
	mu     sync.Mutex
	byHost map[string]trustEntry
	warned map[string]string
}

type trustEntry struct {
	fp   string
	pool *x509.CertPool
}

func newTrust(o *options) *trust {
	t := &trust{files: o.caFiles, dirs: o.caDirs, hosts: map[string]Host{}, dialer: &net.Dialer{},
		log: o.logger, byHost: map[string]trustEntry{}, warned: map[string]string{}}
	for _, h := range o.hosts {
		t.hosts[strings.ToLower(h.Name)] = h
	}
	return t
}

// install makes tr dial TLS through t.
func (t *trust) install(tr *http.Transport) {
	tr.DialTLSContext = t.dialTLS
	tr.ForceAttemptHTTP2 = true
}

// check reads every configured bundle once, so bad paths fail at start.
// It builds no pool: loading the system's roots takes tens of
// milliseconds (44 ms here), which a sync that never dials TLS (an OCI
// layout, a plain-HTTP registry) should not pay; the first TLS dial to a
// host builds its pool.
func (t *trust) check() error {
	files := t.inputs("")
	for _, h := range t.hosts {
		if h.CAFile != "" {
			files = append(files, h.CAFile)
		}
	}
	for _, f := range files {
		if _, err := readPEM(f); err != nil {
			return err
		}
	}
	return nil
}

func (t *trust) inputs(host string) []string {
	files := append([]string(nil), t.files...)
	for _, d := range t.dirs {
		files = append(files, caDirFiles(d)...)
	}
	if h, ok := t.hosts[host]; ok && h.CAFile != "" {
		files = append(files, h.CAFile)
	}
	return files
}

func fingerprint(files []string) string {
	var b strings.Builder
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s:missing;", f)
		}
	}
	return b.String()
}

// build returns the pool for host, from the cache unless an input changed.
func (t *trust) build(host string) (*x509.CertPool, error) {
	files := t.inputs(host)
	fp := fingerprint(files)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byHost[host]; ok && e.fp == fp {
		return e.pool, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		b, err := readPEM(f)
		if err != nil {
			if e, ok := t.byHost[host]; ok {
				// Keep the last good pool; warn once per state.
				if t.warned[host] != fp {
					t.warned[host] = fp
					t.log.Warn("registry CA bundle changed but cannot be read; keeping the previous one", "host", host, "err", err)
				}
				return e.pool, nil
			}
			return nil, err
		}
		pool.AppendCertsFromPEM(b)
	}
	if _, had := t.byHost[host]; had {
		t.log.Info("registry CA bundle reloaded", "host", host)
	}
	t.byHost[host] = trustEntry{fp: fp, pool: pool}
	return pool, nil
}

func (t *trust) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	name, _, err := net.SplitHostPort(addr)
	if err != nil {
		name = addr
	}
	host := strings.ToLower(addr)
	if strings.HasSuffix(host, ":443") {
		if _, ok := t.hosts[host]; !ok {
			host = strings.TrimSuffix(host, ":443")
		}
	}
	cfg := &tls.Config{ServerName: name, NextProtos: []string{"h2", "http/1.1"}}
	if h, ok := t.hosts[host]; ok && h.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true //#nosec G402 -- the operator's per-host choice, warned at start
	} else {
		key := ""
		if _, ok := t.hosts[host]; ok && t.hosts[host].CAFile != "" {
			key = host
		}
		if cfg.RootCAs, err = t.build(key); err != nil {
			return nil, err
		}
	}
	raw, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}
