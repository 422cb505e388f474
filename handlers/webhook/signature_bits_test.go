package webhook

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSignatureEveryWrongLengthAndBit: a signed request whose signature is
// cut to any shorter length (down to empty), has a byte appended, or has
// any one bit flipped is refused, for every HMAC-signed sender; the
// untouched request is accepted. It catches a check that compares only a
// prefix, accepts an empty MAC, or ignores part of it.
func TestSignatureEveryWrongLengthAndBit(t *testing.T) {
	for _, tc := range []struct{ fixture, receiver, header, prefix string }{
		{"generic-push", "ci", "X-Signature-256", "sha256="},
		{"github-package-published", "gh", "X-Hub-Signature-256", "sha256="},
		{"artifactory-pushed-signed", "jfrog", "X-JFrog-Event-Auth", ""},
	} {
		rc, rec := newTestReceiver(t)
		f := loadFixture(t, tc.fixture)
		good := f.header.Get(tc.header)
		sig, err := hex.DecodeString(strings.TrimPrefix(good, tc.prefix))
		if err != nil || len(sig) != 32 {
			t.Fatalf("%s: fixture signature %q", tc.fixture, good)
		}
		send := func(value string) int {
			f.header.Set(tc.header, value)
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, f.request(pathOf(t, rc, tc.receiver)))
			return w.Code
		}
		if code := send(good); code != http.StatusAccepted || len(rec.catalogs()) == 0 {
			t.Fatalf("%s: the signed fixture: %d, triggers %v", tc.fixture, code, rec.catalogs())
		}
		rec.reset()
		var wrong []string
		hexSig := hex.EncodeToString(sig)
		for n := range len(hexSig) {
			wrong = append(wrong, tc.prefix+hexSig[:n]) // every shorter hex length, empty included
		}
		wrong = append(wrong, tc.prefix+hexSig+"00", tc.prefix+hexSig+"0")
		for i := range len(sig) * 8 {
			flipped := append([]byte(nil), sig...)
			flipped[i/8] ^= 1 << (i % 8)
			wrong = append(wrong, tc.prefix+hex.EncodeToString(flipped))
		}
		for _, v := range wrong {
			// A fresh delivery id each time, so no refusal is a duplicate.
			f.header.Set("X-GitHub-Delivery", v)
			if code := send(v); code == http.StatusAccepted {
				t.Fatalf("%s: signature %q accepted", tc.fixture, v)
			}
		}
		if got := rec.catalogs(); len(got) != 0 {
			t.Fatalf("%s: wrong signatures triggered %v", tc.fixture, got)
		}
	}
}

// TestValidHMACLengths: validHMAC itself, for every length of the MAC.
func TestValidHMACLengths(t *testing.T) {
	body := []byte(`{"repository":"acme/catalog","tag":"v1"}`)
	good := strings.TrimPrefix(Sign("s3cret", body), "sha256=")
	if !validHMAC("s3cret", body, good) || validHMAC("other", body, good) || validHMAC("s3cret", append(body, ' '), good) {
		t.Fatal("validHMAC basics")
	}
	for n := range len(good) {
		if validHMAC("s3cret", body, good[:n]) {
			t.Fatalf("a %d-character prefix of the MAC accepted", n)
		}
	}
}
