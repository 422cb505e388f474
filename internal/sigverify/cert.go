package sigverify

import (
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"time"
)

// Fulcio's extensions naming the OIDC issuer: a DER UTF8String, and the
// legacy one holding the raw string.
var (
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidSAN      = asn1.ObjectIdentifier{2, 5, 29, 17}
)

// Identity is who a signing certificate was issued to: its subject
// alternative name (a URI or an email) and the OIDC issuer that vouched
// for it.
type Identity struct {
	SAN    string
	Issuer string
}

// identityOf reads the identity of a Fulcio certificate.
func identityOf(c *x509.Certificate) (Identity, error) {
	var id Identity
	switch {
	case len(c.URIs) > 0:
		id.SAN = c.URIs[0].String()
	case len(c.EmailAddresses) > 0:
		id.SAN = c.EmailAddresses[0]
	default:
		return id, errors.New("the certificate has no URI or email subject alternative name")
	}
	var legacy string
	for _, e := range c.Extensions {
		switch {
		case e.Id.Equal(oidIssuerV2):
			rest, err := asn1.UnmarshalWithParams(e.Value, &id.Issuer, "utf8")
			if err != nil || len(rest) > 0 {
				return id, fmt.Errorf("the certificate's issuer extension is not a UTF8String")
			}
		case e.Id.Equal(oidIssuerV1):
			legacy = string(e.Value)
		}
	}
	// Readers take one extension or the other: two issuers name none.
	switch {
	case id.Issuer == "":
		id.Issuer = legacy
	case legacy != "" && legacy != id.Issuer:
		return id, errors.New("the certificate's issuer extensions name different issuers")
	}
	return id, nil
}

// verifyCert checks leaf chains, through intermediates (the bundle's and
// the authority's), to a trusted certificate authority valid at t, for
// code signing; it returns the chain, leaf first.
func (tr *TrustedRoot) verifyCert(leaf *x509.Certificate, intermediates []*x509.Certificate, t time.Time) ([]*x509.Certificate, error) {
	// A critical SAN holding only names the standard library does not
	// read is Fulcio's: not a reason to refuse.
	c := *leaf
	c.UnhandledCriticalExtensions = nil
	for _, oid := range leaf.UnhandledCriticalExtensions {
		if !oid.Equal(oidSAN) {
			c.UnhandledCriticalExtensions = append(c.UnhandledCriticalExtensions, oid)
		}
	}
	for _, ca := range tr.cas {
		if !within(t, ca.start, ca.end) {
			continue
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(ca.root)
		for _, i := range append(append([]*x509.Certificate{}, ca.intermediates...), intermediates...) {
			inter.AddCert(i)
		}
		chains, err := c.Verify(x509.VerifyOptions{
			Roots: roots, Intermediates: inter, CurrentTime: t,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		})
		if err == nil {
			return chains[0], nil
		}
	}
	return nil, fmt.Errorf("the certificate does not chain to a trusted certificate authority at %s", t.UTC().Format(time.RFC3339))
}
