package sigverify

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
)

var oidEKU = asn1.ObjectIdentifier{2, 5, 29, 37}

// verifyTimestamp verifies an RFC 3161 timestamp response of sig by one of
// the root's timestamp authorities and returns its time.
func (tr *TrustedRoot) verifyTimestamp(tsr, sig []byte) (time.Time, error) {
	ts, err := timestamp.ParseResponse(tsr)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp: %v", err)
	}
	switch ts.HashAlgorithm {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return time.Time{}, errors.New("timestamp: unsupported imprint hash")
	}
	h := ts.HashAlgorithm.New()
	h.Write(sig)
	if !bytes.Equal(h.Sum(nil), ts.HashedMessage) {
		return time.Time{}, errors.New("timestamp: the imprint is not the signature's")
	}
	var errs []error
	for _, a := range tr.tsas {
		err := a.verifyToken(ts)
		if err == nil {
			return ts.Time, nil
		}
		errs = append(errs, err)
	}
	return time.Time{}, fmt.Errorf("timestamp: no trusted authority signed it: %w", errors.Join(errs...))
}

// verifyToken checks the token is signed by the authority's leaf, chained
// to its root at the token's time, within the authority's validity.
func (a *authority) verifyToken(ts *timestamp.Timestamp) error {
	if a.root == nil {
		return errors.New("the authority has no root")
	}
	p7, err := pkcs7.Parse(ts.RawToken)
	if err != nil {
		return err
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(a.root)
	for _, c := range append(append([]*x509.Certificate{}, a.intermediates...), p7.Certificates...) {
		inter.AddCert(c)
	}
	if p7.Certificates == nil {
		if a.leaf == nil {
			return errors.New("no signer certificate")
		}
		p7.Certificates = []*x509.Certificate{a.leaf}
	}
	if err := p7.Verify(); err != nil {
		return err
	}
	signer := p7.GetOnlySigner()
	switch {
	case signer == nil:
		return errors.New("no signer certificate")
	case a.leaf != nil && !a.leaf.Equal(signer):
		return errors.New("signed by another certificate than the authority's")
	}
	chains, err := signer.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: ts.Time, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}})
	if err != nil {
		return err
	}
	if err := checkTSALeaf(signer, chains); err != nil {
		return err
	}
	if !within(ts.Time, a.start, a.end) {
		return errors.New("outside the authority's validity")
	}
	return nil
}

// checkTSALeaf: an end-entity certificate whose one, critical, extended
// key usage is timestamping, below intermediates that allow it.
func checkTSALeaf(c *x509.Certificate, chains [][]*x509.Certificate) error {
	critical := false
	for _, e := range c.Extensions {
		if e.Id.Equal(oidEKU) {
			critical = e.Critical
		}
	}
	switch {
	case c.IsCA:
		return errors.New("the signer is a CA")
	case !critical:
		return errors.New("the signer's extended key usage is not critical")
	case len(c.ExtKeyUsage)+len(c.UnknownExtKeyUsage) != 1 || len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageTimeStamping:
		return errors.New("the signer's only extended key usage must be timestamping")
	}
	for _, chain := range chains {
		ok := true
		for i := 1; i < len(chain)-1; i++ {
			ok = ok && allowsTimestamping(chain[i])
		}
		if ok {
			return nil
		}
	}
	return errors.New("an intermediate does not allow timestamping")
}

func allowsTimestamping(c *x509.Certificate) bool {
	if len(c.ExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageTimeStamping || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}
