package tlsprofile

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseProfiles(t *testing.T) {
	cases := []struct {
		name, version, ciphers string
		min                    uint16
		suites                 []uint16
	}{
		{Intermediate, "", "", tls.VersionTLS12, intermediateCiphers},
		{Modern, "", "", tls.VersionTLS13, nil},
		{Custom, "", "", tls.VersionTLS12, intermediateCiphers},
		{Custom, "TLSv1.3", "", tls.VersionTLS13, nil},
		{Custom, "TLSv1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", tls.VersionTLS12,
			[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}},
	}
	for _, c := range cases {
		p, err := Parse(c.name, c.version, c.ciphers)
		if err != nil || p.MinVersion != c.min || !slices.Equal(p.CipherSuites, c.suites) {
			t.Errorf("%s %q %q: %+v %v", c.name, c.version, c.ciphers, p, err)
		}
	}
}

// Every setting that cannot be offered is refused, saying what is wrong
// and what would do.
func TestParseRefuses(t *testing.T) {
	cases := []struct{ name, version, ciphers, want string }{
		{"old", "", "", `unknown profile "old": want one of intermediate, modern, custom`},
		{"Modern", "", "", `unknown profile "Modern"`},
		{Modern, "TLSv1.2", "", "custom profile only"},
		{Intermediate, "", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "custom profile only"},
		{Custom, "TLSv1.0", "", `unknown minimum version "TLSv1.0": want TLSv1.2 or TLSv1.3`},
		{Custom, "", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA999", `unknown cipher "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA999": want Go's TLS 1.2 cipher suite names`},
		{Custom, "", "TLS_RSA_WITH_RC4_128_SHA", "cipher TLS_RSA_WITH_RC4_128_SHA is insecure"},
		{Custom, "", "TLS_AES_128_GCM_SHA256", `unknown cipher "TLS_AES_128_GCM_SHA256"`},
		{Custom, "TLSv1.3", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ciphers apply to TLS 1.2 only"},
		{Custom, "", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "HTTP/2 needs"},
		{Custom, "", strings.Repeat("X", 5000), "…"},
	}
	for _, c := range cases {
		_, err := Parse(c.name, c.version, c.ciphers)
		if !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 400 {
			t.Errorf("%s %q %.40q: %v, want %q", c.name, c.version, c.ciphers, err, c.want)
		}
	}
}
