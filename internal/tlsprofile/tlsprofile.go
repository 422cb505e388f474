// Package tlsprofile turns the TLS settings catalogd users know
// (--tls-profile intermediate, modern or custom with a minimum version and
// cipher list) into the versions and cipher suites a server offers. The
// profiles follow Mozilla's server-side TLS guidelines, as catalogd's do.
package tlsprofile

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// ErrProfile is returned for settings that name no profile, version or
// cipher a server can offer.
var ErrProfile = errors.New("TLS settings")

// Profile names.
const (
	Intermediate = "intermediate"
	Modern       = "modern"
	Custom       = "custom"
)

// Names are the profiles, the default first.
var Names = []string{Intermediate, Modern, Custom}

// versions are the minimum versions custom accepts: none below TLS 1.2,
// which every supported client has.
var versions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// intermediateCiphers are the TLS 1.2 suites of Mozilla's intermediate
// configuration: forward secret and authenticated only. TLS 1.3's suites
// are not configurable in Go, and all of them are allowed.
var intermediateCiphers = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,
}

// Profile is what a server offers.
type Profile struct {
	MinVersion uint16
	// CipherSuites are the TLS 1.2 suites offered; nil with MinVersion
	// TLS 1.3.
	CipherSuites []uint16
}

// Apply sets c's versions and suites.
func (p Profile) Apply(c *tls.Config) {
	c.MinVersion, c.CipherSuites = p.MinVersion, p.CipherSuites
}

// Parse checks name, and for custom the minimum version and the cipher
// names (Go's, comma-separated), which no other profile takes.
func Parse(name, version, ciphers string) (Profile, error) {
	switch name {
	case Intermediate, Modern:
		if version != "" || ciphers != "" {
			return Profile{}, fmt.Errorf("%w: a minimum version and ciphers are set with the custom profile only, not %q", ErrProfile, name)
		}
		if name == Modern {
			return Profile{MinVersion: tls.VersionTLS13}, nil
		}
		return Profile{MinVersion: tls.VersionTLS12, CipherSuites: intermediateCiphers}, nil
	case Custom:
		return parseCustom(version, ciphers)
	}
	return Profile{}, fmt.Errorf("%w: unknown profile %q: want one of %s", ErrProfile, name, strings.Join(Names, ", "))
}

func parseCustom(version, ciphers string) (Profile, error) {
	if version == "" {
		version = "TLSv1.2"
	}
	p := Profile{MinVersion: versions[version]}
	if p.MinVersion == 0 {
		return p, fmt.Errorf("%w: unknown minimum version %q: want TLSv1.2 or TLSv1.3", ErrProfile, version)
	}
	for _, n := range strings.Split(ciphers, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		id, err := cipher(n)
		if err != nil {
			return p, err
		}
		p.CipherSuites = append(p.CipherSuites, id)
	}
	switch {
	case p.MinVersion == tls.VersionTLS13:
		if len(p.CipherSuites) > 0 {
			return p, fmt.Errorf("%w: ciphers apply to TLS 1.2 only, and the minimum version is TLSv1.3", ErrProfile)
		}
	case len(p.CipherSuites) == 0:
		p.CipherSuites = intermediateCiphers
	case !slices.Contains(p.CipherSuites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) && !slices.Contains(p.CipherSuites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256):
		// HTTP/2 over TLS 1.2 requires one (RFC 7540, 9.2.2); Go's server
		// refuses to start without it.
		return p, fmt.Errorf("%w: HTTP/2 needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 among the ciphers", ErrProfile)
	}
	return p, nil
}

// cipher is the id of a cipher suite Go offers by its name, which must
// be one of the secure ones.
func cipher(name string) (uint16, error) {
	for _, c := range tls.CipherSuites() {
		if c.Name == name && slices.Contains(c.SupportedVersions, tls.VersionTLS12) {
			return c.ID, nil
		}
	}
	for _, c := range tls.InsecureCipherSuites() {
		if c.Name == name {
			return 0, fmt.Errorf("%w: cipher %s is insecure and not offered", ErrProfile, name)
		}
	}
	return 0, fmt.Errorf("%w: unknown cipher %q: want Go's TLS 1.2 cipher suite names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", ErrProfile, truncate.Text(name, 100))
}
