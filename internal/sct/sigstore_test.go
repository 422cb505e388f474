package sct_test

import (
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/catalogsync/catalogsync/internal/sct"
)

// ctLogs is trusted material of CT logs only.
type ctLogs struct {
	root.BaseTrustedMaterial
	logs map[string]*root.TransparencyLog
}

func (m ctLogs) CTLogs() map[string]*root.TransparencyLog { return m.logs }

// sigstoreAccepts is what Verify replaces: sigstore-go's check of one
// SCT by logs.
func sigstoreAccepts(leaf, issuer *x509.Certificate, logs map[[32]byte]sct.Log) bool {
	m := ctLogs{logs: map[string]*root.TransparencyLog{}}
	for id, l := range logs {
		m.logs[hex.EncodeToString(id[:])] = &root.TransparencyLog{ID: id[:], PublicKey: l.Key, HashFunc: crypto.SHA256,
			ValidityPeriodStart: l.Start, ValidityPeriodEnd: l.End}
	}
	return verify.VerifySignedCertificateTimestamp([][]*x509.Certificate{{leaf, issuer}}, 1, &m) == nil
}

func TestVerifyAgreesWithSigstoreGo(t *testing.T) {
	for _, c := range verifyCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.p384 {
				allowP384(t)
			}
			logs := map[[32]byte]sct.Log{}
			for id, key := range c.logs {
				logs[id] = sct.Log{Key: key}
			}
			err := sct.Verify(c.leaf, c.issuer, c.logs)
			if oracle := sigstoreAccepts(c.leaf, c.issuer, logs); oracle != (err == nil) && c.differs == "" {
				t.Errorf("Verify: %v; sigstore-go accepts: %v", err, oracle)
			}
		})
	}
}

func TestVerifyLogsAgreesWithSigstoreGo(t *testing.T) {
	f, leaf, cases := windowCases(t)
	for _, c := range cases {
		logs := map[[32]byte]sct.Log{f.log.id: {Key: f.log.key.Public(), Start: c.start, End: c.end}}
		err := sct.VerifyLogs(leaf, f.ca.cert, logs)
		if oracle := sigstoreAccepts(leaf, f.ca.cert, logs); oracle != (err == nil) {
			t.Errorf("%s: VerifyLogs: %v; sigstore-go accepts: %v", c.name, err, oracle)
		}
	}
}
