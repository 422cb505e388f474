package hostile

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	pushAudience = "https://catalogsync.example.test/hooks/gar"
	pushAccount  = "gcr-push@acme-prj.iam.gserviceaccount.example.test"
)

// TestForgedPushTokensFetchKeySetOncePerInterval sends 100 forged
// Artifact Registry push tokens (right issuer, audience and expiry, signed
// by a key of an unknown id) to a running `catalogsync serve`: each is
// refused, and the issuer's key set, served over loopback, is fetched at
// most once per refresh interval, however long the test took.
func TestForgedPushTokensFetchKeySetOncePerInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("starts catalogsync serve")
	}
	key, attacker := rsaKey(t), rsaKey(t)
	var fetches atomic.Int64
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "issuer-1", Algorithm: "RS256", Use: "sig"}}})
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	defer issuer.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "catalogsync.yaml")
	writeFile(t, cfg, fmt.Sprintf(`storage:
  dir: %s
webhooks:
  receivers:
  - name: gar
    type: gar
    audience: %s
    serviceAccount: %s
    jwks: %s
    jwksAllowPlainHTTP: true
`, filepath.Join(dir, "store"), pushAudience, pushAccount, issuer.URL))
	cs := servers.StartCatalogsync(t, []string{"--config", cfg, "--no-docker-config", "--poll-check-interval", "1h", "--gc-interval", "0"})

	start := time.Now()
	if code, body := sendPush(t, cs.URL, pushToken(t, key, "issuer-1")); code != http.StatusAccepted {
		t.Fatalf("a genuine token: %d %s", code, body)
	}
	for i := range 100 {
		if code, body := sendPush(t, cs.URL, pushToken(t, attacker, fmt.Sprintf("forged-%d", i))); code != http.StatusForbidden {
			t.Fatalf("forged token %d: %d %s, want 403", i, code, body)
		}
	}
	elapsed := time.Since(start)
	allowed := 1 + int64(elapsed/webhook.DefaultJWKSRefreshInterval)
	if n := fetches.Load(); n > allowed {
		t.Fatalf("a genuine and 100 forged tokens in %v: %d key set fetches, want at most %d (one per %v)",
			elapsed.Round(time.Millisecond), n, allowed, webhook.DefaultJWKSRefreshInterval)
	}
	t.Logf("a genuine and 100 forged tokens in %v: %d key set fetch(es)", elapsed.Round(time.Millisecond), fetches.Load())
}

// TestPushReceiverConfigRefusedAtStart: serve refuses to start with a gar
// receiver whose key set is plain HTTP or that names no service account,
// unless allowed by name, and says which field to set.
func TestPushReceiverConfigRefusedAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs catalogsync serve")
	}
	bin := servers.CatalogsyncBinary(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, fields, want string }{
		{"plain-http", "serviceAccount: " + pushAccount + "\n    jwks: http://127.0.0.1:1/jwks", "is plain HTTP, whose keys anyone on the path can replace: use https, or set jwksAllowPlainHTTP: true"},
		{"no-account", "jwks: https://127.0.0.1:1/jwks", "gar receivers need serviceAccount"},
	} {
		cfg := filepath.Join(dir, c.name+".yaml")
		writeFile(t, cfg, fmt.Sprintf("storage:\n  dir: %s\nwebhooks:\n  receivers:\n  - name: gar\n    type: gar\n    audience: %s\n    %s\n",
			filepath.Join(dir, "store"), pushAudience, c.fields))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a serve that started is killed
		cmd := exec.CommandContext(ctx, bin, "serve", "--addr", servers.FreeAddr(t), "--config", cfg, "--no-docker-config")
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: serve %v, want a refusal saying %q:\n%s", c.name, err, c.want, out)
		}
	}
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// pushToken signs a push token as Pub/Sub does, naming key id kid.
func pushToken(t *testing.T, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": webhook.DefaultGARIssuer, "aud": pushAudience, "sub": "1102", "email": pushAccount, "email_verified": true,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := sig.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var pushID atomic.Int64

// sendPush posts an Artifact Registry INSERT notification with token.
func sendPush(t *testing.T, base, token string) (int, string) {
	t.Helper()
	data := base64.StdEncoding.EncodeToString([]byte(`{"action":"INSERT","tag":"europe-west1-docker.pkg.example.test/acme-prj/catalogs/operator-catalog:v1"}`))
	body := fmt.Sprintf(`{"message":{"data":%q,"messageId":"%d"},"subscription":"projects/acme-prj/subscriptions/catalogsync"}`, data, pushID.Add(1))
	req, err := http.NewRequest(http.MethodPost, base+"/hooks/gar", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
