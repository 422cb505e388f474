package webhook

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// verifyWith checks a push token of key against the file key set.
func verifyWith(t *testing.T, fks *fileKeySet, key *rsa.PrivateKey) error {
	t.Helper()
	_, err := fks.VerifySignature(context.Background(), garToken(t, key, nil))
	return err
}

// TestFileKeySetCache: an unchanged file is not read again; a file whose
// size or modification time changed is.
func TestFileKeySetCache(t *testing.T) {
	key, other := garKey(t), mustRSA(t)
	file := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, file, &key.PublicKey)
	fks := &fileKeySet{path: file}
	if err := verifyWith(t, fks, key); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(file)
	// The same size and time: the keys read before are used, even though
	// the bytes are now unreadable (a file replaced in place is only seen
	// by its size or time, so this proves the cache is used).
	b, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Repeat(" ", len(b))), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(file, st.ModTime(), st.ModTime())
	if err := verifyWith(t, fks, key); err != nil {
		t.Fatalf("an unchanged file was read again: %v", err)
	}
	// Another size, the same time: read again.
	writeJWKS(t, file, &other.PublicKey, &other.PublicKey)
	os.Chtimes(file, st.ModTime(), st.ModTime())
	if err := verifyWith(t, fks, key); err == nil {
		t.Fatal("a file of another size was not read again: the removed key still verifies")
	}
	// The same size, another time: read again.
	writeJWKS(t, file, &key.PublicKey)
	st2, _ := os.Stat(file)
	writeJWKS(t, file, &other.PublicKey) // an RSA key of the same size: same JSON length
	if s, _ := os.Stat(file); s.Size() != st2.Size() {
		t.Skipf("key sets of %d and %d bytes: cannot test the time alone", s.Size(), st2.Size())
	}
	os.Chtimes(file, st2.ModTime().Add(time.Second), st2.ModTime().Add(time.Second))
	if err := verifyWith(t, fks, key); err == nil {
		t.Fatal("a file with another time was not read again")
	}
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestFileKeySetKeepsOnlyPublicSigningKeys: keys for encryption and
// private keys are not verification keys; a key with no "use" is.
func TestFileKeySetKeepsOnlyPublicSigningKeys(t *testing.T) {
	key := garKey(t)
	dir := t.TempDir()
	write := func(name string, keys ...jose.JSONWebKey) string {
		b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		return writeFile(t, dir, name, b)
	}
	for name, k := range map[string]jose.JSONWebKey{
		"enc":     {Key: &key.PublicKey, KeyID: "a", Algorithm: "RS256", Use: "enc"},
		"private": {Key: key, KeyID: "a", Algorithm: "RS256"},
	} {
		if _, err := (&fileKeySet{path: write(name, k)}).keys(); err == nil {
			t.Errorf("a key set with only a %s key accepted", name)
		}
	}
	fks := &fileKeySet{path: write("nouse", jose.JSONWebKey{Key: &key.PublicKey, KeyID: "a", Algorithm: "RS256"})}
	if err := verifyWith(t, fks, key); err != nil {
		t.Fatalf("a public key without \"use\": %v", err)
	}
}

// TestGARVerifierConfig: a key set is required; an https URL is a remote
// key set (not fetched when the receiver is made), an http URL only when
// allowed by name, anything else a file that must hold keys now; the
// service account is required unless waived by name.
func TestGARVerifierConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, file, &garKey(t).PublicKey)
	sa := garServiceAccount
	for _, c := range []ReceiverConfig{
		{JWKS: "https://127.0.0.1:1/jwks", ServiceAccount: sa},
		{JWKS: "http://127.0.0.1:1/jwks", ServiceAccount: sa, JWKSAllowPlainHTTP: true},
		{JWKS: file, ServiceAccount: sa},
		{JWKS: file, AnyServiceAccount: true},
	} {
		c.Name, c.Audience = "g", garAudience
		if _, err := garVerifier(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []struct {
		cfg  ReceiverConfig
		want string
	}{
		{ReceiverConfig{ServiceAccount: sa}, "need jwks"},
		{ReceiverConfig{JWKS: filepath.Join(t.TempDir(), "missing.json"), ServiceAccount: sa}, "missing.json"},
		{ReceiverConfig{JWKS: "https://[::1", ServiceAccount: sa}, "jwks: "},
		{ReceiverConfig{JWKS: "http://127.0.0.1:1/jwks", ServiceAccount: sa}, "is plain HTTP, whose keys anyone on the path can replace: use https, or set jwksAllowPlainHTTP: true"},
		{ReceiverConfig{JWKS: file}, "need serviceAccount (the push subscription's service account email); without it any token the issuer signed for the audience is accepted: set anyServiceAccount: true"},
	} {
		c.cfg.Name, c.cfg.Audience = "g", garAudience
		if _, err := garVerifier(c.cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a configuration error saying %q", c.cfg, err, c.want)
		}
	}
}

// TestGARAuthorizationForms: headers that are not a bearer token, however
// short, are refused as such without reaching the verifier.
func TestGARAuthorizationForms(t *testing.T) {
	g := &gar{} // no verifier: reaching it would panic
	for _, h := range []string{"B", "Bearer", "Bearer ", "Basic dXNlcjpwYXNzd29yZA==", "Token abcdefgh"} {
		r := httptest.NewRequest("POST", "/hooks/gar", nil)
		r.Header.Set("Authorization", h)
		err := g.Authenticate(r, nil, "")
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "not a bearer token") {
			t.Errorf("Authorization %q: %v, want forbidden as not a bearer token", h, err)
		}
	}
}

// TestGARPushNames: only the tag field names a tag, and only when it has
// no digest; a name that is not a registry image is refused by name.
func TestGARPushNames(t *testing.T) {
	const img = "europe-docker.pkg.example.test/p/r/cat"
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct{ digestName, tagName, wantTag, wantDigest string }{
		{img + ":v2", "", "", ""},
		{"", img + ":v1@" + d, "", d},
		{"", img + ":v1", "v1", ""},
	} {
		ps, err := garPush(tc.digestName, tc.tagName)
		if err != nil || len(ps) != 1 || ps[0].Tag != tc.wantTag || ps[0].Digest != tc.wantDigest {
			t.Errorf("digest %q tag %q: %+v %v, want tag %q digest %q", tc.digestName, tc.tagName, ps, err, tc.wantTag, tc.wantDigest)
		}
	}
	for _, name := range []string{"ocidir://p/r/cat:v1", "ocidir:///tmp/x"} {
		if _, err := garPush(name, ""); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "invalid image name") {
			t.Errorf("%q: %v, want malformed as an invalid image name", name, err)
		}
	}
}

// TestGARShortBearerReachesVerifier: "Bearer x" is a bearer token (a bad
// one), not another scheme.
func TestGARShortBearerReachesVerifier(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, file, &garKey(t).PublicKey)
	v, err := garVerifier(ReceiverConfig{Name: "g", Audience: garAudience, JWKS: file, AnyServiceAccount: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/hooks/gar", nil)
	r.Header.Set("Authorization", "Bearer x")
	if err := (&gar{verifier: v}).Authenticate(r, nil, ""); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "push token") {
		t.Fatalf("Bearer x: %v, want a refused push token", err)
	}
}

// TestGitHubFormWithoutPayload: a form body must carry the JSON in its
// "payload" field; a form without it is refused as such.
func TestGitHubFormWithoutPayload(t *testing.T) {
	for _, body := range []string{"a=b", "payload=", "%zz"} {
		r := httptest.NewRequest("POST", "/hooks/github", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("X-GitHub-Event", "package")
		_, err := (&gitHub{}).Parse(r, []byte(body))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "without a payload field") {
			t.Errorf("%q: %v, want malformed: no payload field", body, err)
		}
	}
}

// A JWKS file that is missing, is not JSON or holds no public signing key
// fails verification with an error naming the problem, never with a key
// set that accepts nothing silently.
func TestFileKeySetRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "jwks: "},
		{writeFile(t, dir, "garbage", []byte(`{"keys":`)), "jwks " + dir},
		{writeFile(t, dir, "empty", []byte(`{"keys":[]}`)), "no public signing keys"},
	} {
		ks := &fileKeySet{path: c.path}
		if _, err := ks.VerifySignature(context.Background(), "a.b.c"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.path, err, c.want)
		}
	}
}

// writeFile writes b to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
