package webhook

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwksServer is an issuer's key set endpoint over loopback that counts
// its fetches; set changes the keys it serves.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64
	mu      sync.Mutex
	body    []byte
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// set makes the server serve keys, key ids the map's keys.
func (s *jwksServer) set(keys map[string]*rsa.PublicKey) {
	var set jose.JSONWebKeySet
	for kid, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: "RS256", Use: "sig"})
	}
	b, _ := json.Marshal(set)
	s.mu.Lock()
	s.body = b
	s.mu.Unlock()
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestGARUnknownKeyFetchesKeySetOncePerInterval: forged tokens naming
// keys the set lacks fetch the key set at most once per interval, however
// many and however concurrent; tokens failing the cheap checks (issuer,
// audience, expiry, algorithm) never fetch it; a rotated key is picked up
// once the interval has passed.
func TestGARUnknownKeyFetchesKeySetOncePerInterval(t *testing.T) {
	key, attacker, rotated := garKey(t), mustRSA(t), mustRSA(t)
	srv := newJWKSServer(t)
	srv.set(map[string]*rsa.PublicKey{"catalogsync-test-1": &key.PublicKey})
	clock := &fakeClock{now: time.Now()}
	cfg := ReceiverConfig{Name: "gar", Type: TypeGAR, Audience: garAudience, JWKS: srv.URL,
		JWKSAllowPlainHTTP: true, ServiceAccount: garServiceAccount}
	rc, err := NewReceiver(Config{Receivers: []ReceiverConfig{cfg}}, testCatalogs, &recorder{}, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	var ids atomic.Int64
	send := func(token string) int {
		body := pubsubBody(`{"action":"INSERT","tag":"europe-west1-docker.pkg.example.test/acme-prj/catalogs/operator-catalog:v4.16"}`, fmt.Sprint(ids.Add(1)))
		req := httptest.NewRequest(http.MethodPost, "/hooks/gar", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		return w.Code
	}
	forge := func(n int, concurrent bool) {
		var wg sync.WaitGroup
		for i := range n {
			one := func() {
				if code := send(garTokenOfKey(t, attacker, fmt.Sprintf("forged-%d", i), nil)); code != http.StatusForbidden {
					t.Errorf("forged token %d: %d, want 403", i, code)
				}
			}
			if concurrent {
				wg.Go(one)
			} else {
				one()
			}
		}
		wg.Wait()
	}
	if code := send(garToken(t, key, nil)); code != http.StatusAccepted {
		t.Fatalf("a genuine token: %d", code)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("first token: %d fetches, want 1", n)
	}
	forge(100, false)
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("100 forged tokens within the interval: %d key set fetches, want none beyond the first", n)
	}

	// Past the interval: tokens failing the checks before the signature
	// fetch nothing.
	clock.add(DefaultJWKSRefreshInterval + time.Second)
	for name, edit := range map[string]func(map[string]any){
		"issuer":   func(c map[string]any) { c["iss"] = "https://issuer.example.test" },
		"audience": func(c map[string]any) { c["aud"] = "https://elsewhere.example.test" },
		"expired":  func(c map[string]any) { c["exp"] = clock.Now().Add(-time.Minute).Unix() },
	} {
		if code := send(garTokenOfKey(t, attacker, "forged-"+name, edit)); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if code := send("eyJhbGciOiJub25lIiwia2lkIjoieCJ9.eyJpc3MiOiJ4In0."); code != http.StatusForbidden {
		t.Errorf("unsigned token: %d, want 403", code)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("tokens failing issuer, audience, expiry or algorithm: %d fetches, want none", n)
	}

	// A rotation: the new key is fetched, once, and verifies; forged
	// tokens after it fetch nothing more within the interval.
	srv.set(map[string]*rsa.PublicKey{"catalogsync-test-1": &key.PublicKey, "rotated": &rotated.PublicKey})
	if code := send(garTokenOfKey(t, rotated, "rotated", nil)); code != http.StatusAccepted {
		t.Fatalf("a token of the rotated key: %d", code)
	}
	forge(100, true)
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("a rotation and 100 forged tokens in the next interval: %d fetches, want 2 in all", n)
	}
}

// TestRemoteKeySetRefusals: a key set that cannot be fetched, is too
// large or holds no signing key fails verification with an error saying
// so, and a known key id with a bad signature fetches nothing.
func TestRemoteKeySetRefusals(t *testing.T) {
	key := garKey(t)
	for _, c := range []struct {
		name, want string
		handler    http.HandlerFunc
	}{
		{"status", "answered 500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }},
		{"size", "larger than 1048576 bytes", func(w http.ResponseWriter, _ *http.Request) { w.Write(bytes.Repeat([]byte(" "), maxJWKSBytes+1)) }},
		{"empty", "no public signing keys", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"keys":[]}`)) }},
		{"json", "jwks http", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"keys":`)) }},
	} {
		srv := httptest.NewServer(c.handler)
		ks := &remoteKeySet{url: srv.URL, client: srv.Client(), algs: []jose.SignatureAlgorithm{jose.RS256},
			interval: time.Minute, now: time.Now}
		_, err := ks.VerifySignature(t.Context(), garToken(t, key, nil))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		// Within the interval the failure is reported again, not fetched.
		if _, err2 := ks.VerifySignature(t.Context(), garToken(t, key, nil)); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: second attempt: %v, want %v", c.name, err2, err)
		}
		srv.Close()
	}

	srv := newJWKSServer(t)
	srv.set(map[string]*rsa.PublicKey{"catalogsync-test-1": &key.PublicKey})
	ks := &remoteKeySet{url: srv.URL, client: srv.Client(), algs: []jose.SignatureAlgorithm{jose.RS256}, interval: time.Minute, now: time.Now}
	if _, err := ks.VerifySignature(t.Context(), garToken(t, key, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.VerifySignature(t.Context(), garToken(t, mustRSA(t), nil)); err == nil {
		t.Fatal("a token of another key under a known key id verified")
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("a bad signature under a known key id: %d fetches, want 1 in all", n)
	}
}
