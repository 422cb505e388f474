package source

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"
)

// Credential is a registry user name and password (or identity token as
// regclient takes it). It is never logged or put in errors.
type Credential struct {
	Username, Password string
}

// String hides the password from fmt and slog.
func (c Credential) String() string { return c.Username + ":<redacted>" }

// CredentialProvider supplies registry credentials that may change while
// the service runs (a cluster pull secret).
type CredentialProvider interface {
	// Credentials returns credentials by registry host and a version that
	// changes whenever they do. It must be cheap: it is called before
	// every registry operation.
	Credentials() (map[string]Credential, uint64)
}

// ErrTrust is wrapped by errors reading CA bundles.
var ErrTrust = errors.New("registry CA bundle")

// WithCAFile trusts the CA certificates of a PEM bundle for every registry,
// besides the system's. The file is read again when it changes.
// An empty path adds nothing.
func WithCAFile(path string) Option {
	return func(o *options) {
		if path != "" {
			o.caFiles = append(o.caFiles, path)
		}
	}
}

// WithCADir trusts every PEM file (*.crt, *.pem) of a directory, as
// catalogd's pull CA directory; read again when an entry changes.
// An empty dir adds nothing.
func WithCADir(dir string) Option {
	return func(o *options) {
		if dir != "" {
			o.caDirs = append(o.caDirs, dir)
		}
	}
}

// WithCredentials adds credentials from p, over the docker config's and
// under those of a host's own Username/Password. nil adds nothing.
func WithCredentials(p CredentialProvider) Option {
	return func(o *options) {
		if p != nil {
			o.creds = p
		}
	}
}

// access builds the regclient for the current credentials, and builds it
// again when they change (regclient takes them at construction). In-flight
// operations keep the client they started with.
type access struct {
	base  []regclient.Opt
	hosts []Host
	o     *options
	log   *slog.Logger

	mu sync.Mutex
	rc *regclient.RegClient
	fp string
}

func newAccess(o *options, base []regclient.Opt) (*access, error) {
	a := &access{base: base, hosts: o.hosts, o: o, log: o.logger}
	for _, h := range o.hosts {
		if h.Name == "" {
			return nil, fmt.Errorf("registry host config without a name")
		}
		if h.InsecureSkipVerify {
			a.log.Warn("registry TLS certificates are NOT verified for this host", "host", h.Name)
		}
	}
	fp := a.fingerprint()
	rc, err := a.build()
	if err != nil {
		return nil, err
	}
	a.rc, a.fp = rc, fp
	return a, nil
}

// client returns the regclient for the current files and credentials: a
// stat of each CA file and directory, and the provider's version, say
// whether to build a new one.
func (a *access) client() *regclient.RegClient {
	fp := a.fingerprint()
	a.mu.Lock()
	defer a.mu.Unlock()
	if fp == a.fp {
		return a.rc
	}
	rc, err := a.build()
	if err != nil {
		// Keep serving with the last good material; say so once per change.
		a.log.Warn("registry credentials changed but cannot be used; keeping the previous ones", "err", err)
		a.fp = fp
		return a.rc
	}
	a.log.Info("registry credentials reloaded")
	a.rc, a.fp = rc, fp
	return rc
}

// fingerprint identifies the credentials' state.
func (a *access) fingerprint() string {
	if a.o.creds == nil {
		return ""
	}
	_, v := a.o.creds.Credentials()
	return fmt.Sprint(v)
}

// caDirFiles lists a CA directory's PEM files, sorted; Kubernetes volume
// bookkeeping entries (..data) are skipped, their targets are listed.
func caDirFiles(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return []string{dir}
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".crt") || strings.HasSuffix(n, ".pem")) {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	sort.Strings(out)
	return out
}

// readPEM reads a CA bundle and checks it holds at least one certificate.
func readPEM(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrust, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w %s: no PEM certificate", ErrTrust, path)
	}
	return b, nil
}

// build makes a regclient from the base options and each host's TLS
// mode and credentials.
func (a *access) build() (*regclient.RegClient, error) {
	hosts, err := a.configHosts()
	if err != nil {
		return nil, err
	}
	opts := append([]regclient.Opt(nil), a.base...)
	opts = append(opts, regclient.WithConfigHost(hosts...))
	return regclient.New(opts...), nil
}

// configHosts merges, per host, the provider's credentials and the host's
// own configuration (which wins) into regclient host entries.
func (a *access) configHosts() ([]config.Host, error) {
	byName := map[string]*config.Host{}
	var order []string
	get := func(name string) *config.Host {
		ch := config.HostNewName(name)
		if h, ok := byName[ch.Name]; ok {
			return h
		}
		ch.TLS = config.TLSEnabled
		byName[ch.Name] = ch
		order = append(order, ch.Name)
		return ch
	}
	if a.o.creds != nil {
		creds, _ := a.o.creds.Credentials()
		names := make([]string, 0, len(creds))
		for n := range creds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ch := get(n)
			ch.User, ch.Pass = creds[n].Username, creds[n].Password
		}
	}
	for _, h := range a.hosts {
		ch := get(h.Name)
		ch.ReqPerSec = h.ReqPerSec
		switch {
		case h.PlainHTTP:
			ch.TLS = config.TLSDisabled
		case h.InsecureSkipVerify:
			ch.TLS = config.TLSInsecure
		}
		if h.Username != "" || h.Password != "" {
			ch.User, ch.Pass = h.Username, h.Password
		}
	}
	out := make([]config.Host, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, nil
}
