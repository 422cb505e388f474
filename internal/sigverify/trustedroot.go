package sigverify

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/catalogsync/catalogsync/internal/sct"
)

// TrustedRoot is the trust material of a sigstore trusted_root.json: the
// certificate authorities that issue signing certificates, the timestamp
// authorities, the transparency logs and the certificate transparency
// logs.
type TrustedRoot struct {
	cas    []authority
	tsas   []authority
	tlogs  map[string]*logKey
	ctlogs map[[32]byte]sct.Log
}

// authority is a certificate authority: its root, the intermediates
// below it, for a timestamp authority its leaf, and when it is trusted.
type authority struct {
	root          *x509.Certificate
	intermediates []*x509.Certificate
	leaf          *x509.Certificate
	start, end    time.Time
}

// logKey is a transparency log's key and when it is trusted.
type logKey struct {
	pub        crypto.PublicKey
	start, end time.Time
}

type validity struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

type trustedRootJSON struct {
	Tlogs                  []logJSON `json:"tlogs"`
	CertificateAuthorities []caJSON  `json:"certificateAuthorities"`
	Ctlogs                 []logJSON `json:"ctlogs"`
	TimestampAuthorities   []caJSON  `json:"timestampAuthorities"`
}

type logJSON struct {
	HashAlgorithm string `json:"hashAlgorithm"`
	PublicKey     struct {
		RawBytes []byte    `json:"rawBytes"`
		ValidFor *validity `json:"validFor"`
	} `json:"publicKey"`
	LogID struct {
		KeyID []byte `json:"keyId"`
	} `json:"logId"`
}

type caJSON struct {
	CertChain struct {
		Certificates []RawCert `json:"certificates"`
	} `json:"certChain"`
	ValidFor *validity `json:"validFor"`
}

// LoadTrustedRoot reads a trusted_root.json file.
func LoadTrustedRoot(path string) (*TrustedRoot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTrustedRoot(b)
}

// ParseTrustedRoot reads a trusted root's JSON.
func ParseTrustedRoot(b []byte) (*TrustedRoot, error) {
	var j trustedRootJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, err
	}
	if err := checkKeys(b, rootKey); err != nil {
		return nil, err
	}
	tr := &TrustedRoot{tlogs: map[string]*logKey{}, ctlogs: map[[32]byte]sct.Log{}}
	for i, l := range j.Tlogs {
		k, err := l.parse()
		if err != nil {
			return nil, fmt.Errorf("transparency log %d: %w", i, err)
		}
		tr.tlogs[string(l.LogID.KeyID)] = k
	}
	for i, l := range j.Ctlogs {
		k, err := l.parse()
		if err != nil {
			return nil, fmt.Errorf("certificate transparency log %d: %w", i, err)
		}
		tr.ctlogs[sha256.Sum256(l.PublicKey.RawBytes)] = sct.Log{Key: k.pub, Start: k.start, End: k.end}
	}
	for i, c := range j.CertificateAuthorities {
		a, err := c.parse(false)
		if err != nil {
			return nil, fmt.Errorf("certificate authority %d: %w", i, err)
		}
		tr.cas = append(tr.cas, a)
	}
	for i, c := range j.TimestampAuthorities {
		a, err := c.parse(true)
		if err != nil {
			return nil, fmt.Errorf("timestamp authority %d: %w", i, err)
		}
		tr.tsas = append(tr.tsas, a)
	}
	return tr, nil
}

func (l logJSON) parse() (*logKey, error) {
	if l.HashAlgorithm != "SHA2_256" {
		return nil, fmt.Errorf("unsupported hash algorithm %q", l.HashAlgorithm)
	}
	if len(l.LogID.KeyID) == 0 {
		return nil, errors.New("no log ID")
	}
	pub, err := x509.ParsePKIXPublicKey(l.PublicKey.RawBytes)
	if err != nil {
		return nil, err
	}
	k := &logKey{pub: pub}
	if v := l.PublicKey.ValidFor; v != nil {
		k.start, k.end = v.Start, v.End
	}
	return k, nil
}

// parse reads a chain: intermediates then the root last; for a timestamp
// authority a first certificate that is no CA is its leaf.
func (c caJSON) parse(tsa bool) (authority, error) {
	var a authority
	certs := c.CertChain.Certificates
	if len(certs) == 0 {
		return a, errors.New("empty certificate chain")
	}
	for i, raw := range certs {
		cert, err := x509.ParseCertificate(raw.RawBytes)
		if err != nil {
			return a, err
		}
		switch {
		case i == 0 && tsa && !cert.IsCA:
			a.leaf = cert
		case i == len(certs)-1:
			a.root = cert
		default:
			a.intermediates = append(a.intermediates, cert)
		}
	}
	if c.ValidFor != nil {
		a.start, a.end = c.ValidFor.Start, c.ValidFor.End
	}
	return a, nil
}

// HasTlogs says whether the root has a transparency log.
func (tr *TrustedRoot) HasTlogs() bool { return len(tr.tlogs) > 0 }

// HasTimestampAuthorities says whether the root has a timestamp authority.
func (tr *TrustedRoot) HasTimestampAuthorities() bool { return len(tr.tsas) > 0 }

// HasCTLogs says whether the root has a certificate transparency log:
// then a certificate needs a verified SCT.
func (tr *TrustedRoot) HasCTLogs() bool { return len(tr.ctlogs) > 0 }

// within says whether t is in [start, end], a zero bound being open.
func within(t, start, end time.Time) bool {
	return (start.IsZero() || !t.Before(start)) && (end.IsZero() || !t.After(end))
}
