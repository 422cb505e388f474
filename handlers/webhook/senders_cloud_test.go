package webhook

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Tests of the Artifact Registry, Nexus, ECR and CDEvents receivers.

const (
	garAudience       = "https://catalogsync.example.test/hooks/gar"
	garServiceAccount = "gcr-push@acme-prj.iam.gserviceaccount.example.test"
)

// garKey is the test signing key whose public half is gar-jwks.json.
func garKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "gar-test-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PrivateKey)
}

// garToken signs a push token as Pub/Sub does; edit changes the claims.
func garToken(t testing.TB, key *rsa.PrivateKey, edit func(map[string]any)) string {
	t.Helper()
	return garTokenOfKey(t, key, "catalogsync-test-1", edit)
}

// garTokenOfKey signs a push token naming key id kid.
func garTokenOfKey(t testing.TB, key *rsa.PrivateKey, kid string, edit func(map[string]any)) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{
		"iss": DefaultGARIssuer, "aud": garAudience, "azp": "110234567890123456789",
		"sub": "110234567890123456789", "email": garServiceAccount, "email_verified": true,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if edit != nil {
		edit(claims)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := sig.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pubsubBody wraps notification data as a Pub/Sub push does.
func pubsubBody(data string, id string) []byte {
	b, _ := json.Marshal(map[string]any{
		"message":      map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(data)), "messageId": id},
		"subscription": "projects/acme-prj/subscriptions/catalogsync-gcr-push",
	})
	return b
}

func TestGAR(t *testing.T) {
	key := garKey(t)
	good := "Bearer " + garToken(t, key, nil)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bad := func(edit func(map[string]any)) map[string]string {
		return map[string]string{"Authorization": "Bearer " + garToken(t, key, edit)}
	}
	img := "europe-west1-docker.pkg.example.test/acme-prj/catalogs/operator-catalog"
	cases := []httpCase{
		{name: "insert with tag", fixture: "gar-push", want: 202, trig: []string{"gar"}},
		{name: "insert untagged", fixture: "gar-push-untagged", want: 202, trig: []string{"gar"}},
		{name: "delete", fixture: "gar-delete", want: 202},
		{name: "token signed by another key", fixture: "gar-push", header: map[string]string{"Authorization": "Bearer " + garToken(t, other, nil)}, want: 403},
		{name: "token for another audience", fixture: "gar-push", header: bad(func(c map[string]any) { c["aud"] = "https://elsewhere.example.test/push" }), want: 403},
		{name: "token of another issuer", fixture: "gar-push", header: bad(func(c map[string]any) { c["iss"] = "https://issuer.example.test" }), want: 403},
		{name: "expired token replayed", fixture: "gar-push", header: bad(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), want: 403},
		{name: "token of another service account", fixture: "gar-push", header: bad(func(c map[string]any) { c["email"] = "intruder@example.test" }), want: 403},
		{name: "unverified email", fixture: "gar-push", header: bad(func(c map[string]any) { c["email_verified"] = false }), want: 403},
		{name: "unsigned token", fixture: "gar-push", header: map[string]string{"Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0."}, want: 403},
		{name: "not a bearer token", fixture: "gar-push", header: map[string]string{"Authorization": "Basic Z2NyOnB1c2g="}, want: 403},
		{name: "placeholder token of the fixture", fixture: "gar-push", header: map[string]string{"Authorization": loadFixture(t, "gar-push").header.Get("Authorization")}, want: 403},
		{name: "no message", fixture: "gar-push", body: []byte(`{"subscription":"projects/p/subscriptions/s"}`), want: 400},
		{name: "data not base64", fixture: "gar-push", body: []byte(`{"message":{"data":"%%%","messageId":"1"}}`), want: 400},
		{name: "data not a notification", fixture: "gar-push", body: pubsubBody(`[1]`, "2"), want: 400},
		{name: "no action", fixture: "gar-push", body: pubsubBody(`{"tag":"`+img+`:v4.16"}`, "3"), want: 400},
		{name: "insert of an invalid name", fixture: "gar-push", body: pubsubBody(`{"action":"INSERT","tag":"Europe/../x:v1"}`, "4"), want: 400},
		{name: "digest and tag of different images", fixture: "gar-push", body: pubsubBody(`{"action":"INSERT","digest":"`+img+`@`+digIndex+`","tag":"`+img+`-other:v4.16"}`, "5"), want: 400},
		{name: "insert naming nothing", fixture: "gar-push", body: pubsubBody(`{"action":"INSERT"}`, "6"), want: 400},
	}
	common := commonCases("gar-push", "Authorization", false)
	for i := range common {
		if common[i].name == "forged auth" {
			common[i].header = map[string]string{"Authorization": "Bearer not.a.token"}
		}
	}
	cases = append(cases, common...)
	// Every case without its own credentials carries a valid token.
	for i := range cases {
		if _, set := cases[i].header["Authorization"]; !set {
			h := map[string]string{"Authorization": good}
			for k, v := range cases[i].header {
				h[k] = v
			}
			cases[i].header = h
		}
	}
	runCases(t, "gar", cases)
}

func TestGARConfig(t *testing.T) {
	jwks := fixtureDir + "/gar-jwks.json"
	for _, c := range []ReceiverConfig{
		{Name: "g", Type: TypeGAR, JWKS: jwks},                                  // no audience
		{Name: "g", Type: TypeGAR, Audience: garAudience},                       // no key set
		{Name: "g", Type: TypeGAR, Audience: garAudience, JWKS: "/nonexistent"}, // unreadable
		{Name: "g", Type: TypeGAR, Audience: garAudience, JWKS: fixtureDir + "/gar-push.json"},
	} {
		c.ServiceAccount = garServiceAccount
		if _, err := NewReceiver(Config{Receivers: []ReceiverConfig{c}}, testCatalogs, &recorder{}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestGARRemoteJWKS fetches the key set from a URL, and the file key set
// follows a rotated file.
func TestGARRemoteJWKS(t *testing.T) {
	jwks, err := os.ReadFile(fixtureDir + "/gar-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	fetches := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "jwks.json")
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	writeJWKS(t, file, &other.PublicKey)
	key := garKey(t)
	for _, c := range []struct {
		name string
		cfg  ReceiverConfig
	}{
		{"url", ReceiverConfig{Name: "gar", Type: TypeGAR, Audience: garAudience, JWKS: srv.URL, JWKSAllowPlainHTTP: true, ServiceAccount: garServiceAccount}},
		{"file", ReceiverConfig{Name: "gar", Type: TypeGAR, Audience: garAudience, JWKS: file, AnyServiceAccount: true}},
	} {
		rec := &recorder{}
		rc, err := NewReceiver(Config{Receivers: []ReceiverConfig{c.cfg}}, testCatalogs, rec)
		if err != nil {
			t.Fatal(err)
		}
		send := func(id string) int {
			req := httptest.NewRequest(http.MethodPost, "/hooks/gar", bytes.NewReader(pubsubBody(`{"action":"INSERT","tag":"europe-west1-docker.pkg.example.test/acme-prj/catalogs/operator-catalog:v4.16"}`, id)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+garToken(t, key, nil))
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, req)
			return w.Code
		}
		if c.name == "file" {
			if code := send("a"); code != 403 {
				t.Fatalf("file with another key: %d", code)
			}
			// A rotated file (another size) is read again.
			writeJWKS(t, file, &other.PublicKey, &key.PublicKey)
		}
		if code := send("b"); code != 202 || len(rec.catalogs()) != 1 {
			t.Fatalf("%s: %d, triggers %v", c.name, code, rec.catalogs())
		}
	}
	if fetches == 0 {
		t.Fatal("the key set URL was never fetched")
	}
}

func writeJWKS(t *testing.T, path string, keys ...*rsa.PublicKey) {
	t.Helper()
	var set jose.JSONWebKeySet
	for i, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: string(rune('a' + i)), Algorithm: "RS256", Use: "sig"})
	}
	b, _ := json.Marshal(set)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNexus(t *testing.T) {
	const sig = "X-Nexus-Webhook-Signature"
	resigned := func(body string) map[string]string {
		return map[string]string{sig: SignSHA1("hook-test-secret", []byte(body))}
	}
	cases := []httpCase{
		// Connector and path-based routing are both announced.
		{name: "docker component created", fixture: "nexus-component-created", want: 202, trig: []string{"nexus", "nexus-routed"}},
		{name: "manifest asset by digest", fixture: "nexus-asset-manifest", want: 202, trig: []string{"nexus", "nexus-routed"}},
		{name: "blob asset", fixture: "nexus-asset-blob", want: 202},
		{name: "npm component", fixture: "nexus-component-npm", want: 202},
		{name: "audit event", fixture: "nexus-audit", want: 202},
		{name: "component deleted", fixture: "nexus-component-created", body: []byte(`{"repositoryName":"docker-hosted","action":"DELETED","component":{"format":"docker","name":"acme/operator-catalog","version":"v4.16"}}`),
			header: resigned(`{"repositoryName":"docker-hosted","action":"DELETED","component":{"format":"docker","name":"acme/operator-catalog","version":"v4.16"}}`), want: 202},
		{name: "repository name not a path", fixture: "nexus-component-created", body: []byte(`{"repositoryName":"Docker Hosted","action":"CREATED","component":{"format":"docker","name":"acme/operator-catalog","version":"v4.16"}}`),
			header: resigned(`{"repositoryName":"Docker Hosted","action":"CREATED","component":{"format":"docker","name":"acme/operator-catalog","version":"v4.16"}}`), want: 202, trig: []string{"nexus"}},
		{name: "no component", fixture: "nexus-component-created", body: []byte(`{"repositoryName":"docker-hosted","action":"CREATED"}`), header: resigned(`{"repositoryName":"docker-hosted","action":"CREATED"}`), want: 400},
		{name: "no event header", fixture: "nexus-component-created", header: map[string]string{"X-Nexus-Webhook-Id": ""}, want: 400},
		{name: "sha256 signature is not nexus'", fixture: "nexus-component-created", header: map[string]string{sig: Sign("hook-test-secret", loadFixture(t, "nexus-component-created").body)}, want: 403},
		{name: "signature replayed on another body", fixture: "nexus-component-created", body: loadFixture(t, "nexus-asset-manifest").body, want: 403},
	}
	common := commonCases("nexus-component-created", sig, false)
	for i := range common {
		switch common[i].name {
		case "forged auth":
			common[i].header = map[string]string{sig: SignSHA1("another-secret", loadFixture(t, "nexus-component-created").body)}
		case "oversized body", "malformed JSON", "not JSON at all":
			common[i].header = resigned(string(common[i].body))
		}
	}
	runCases(t, "nexus", append(cases, common...))
}

func TestECR(t *testing.T) {
	basic := func(userpass string) map[string]string {
		return map[string]string{"X-Api-Key": "", "Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(userpass))}
	}
	cases := []httpCase{
		{name: "push", fixture: "ecr-push", want: 202, trig: []string{"ecr"}},
		{name: "failed push", fixture: "ecr-push-failed", want: 202},
		{name: "delete", fixture: "ecr-delete", want: 202},
		{name: "scan event", fixture: "ecr-scan", want: 202},
		{name: "api key as prefix is forged", fixture: "ecr-push", header: map[string]string{"X-Api-Key": "ecr-destination-key-8f2d1c0"}, want: 403},
		{name: "other source", fixture: "ecr-push", body: []byte(`{"id":"1","source":"aws.s3","detail-type":"Object Created","detail":{}}`), want: 202},
		{name: "no detail-type", fixture: "ecr-push", body: []byte(`{"id":"1","source":"aws.ecr","detail":{}}`), want: 400},
		{name: "no action-type", fixture: "ecr-push", body: []byte(`{"id":"1","source":"aws.ecr","detail-type":"ECR Image Action","detail":{"result":"SUCCESS"}}`), want: 400},
		{name: "push without repository", fixture: "ecr-push", body: []byte(`{"id":"1","source":"aws.ecr","detail-type":"ECR Image Action","detail":{"result":"SUCCESS","action-type":"PUSH","image-tag":"v1"}}`), want: 400},
		{name: "bad digest", fixture: "ecr-push", body: []byte(`{"id":"1","source":"aws.ecr","detail-type":"ECR Image Action","detail":{"result":"SUCCESS","action-type":"PUSH","repository-name":"acme/operator-catalog","image-digest":"sha256:1"}}`), want: 400},
		{name: "basic auth to the api key receiver", fixture: "ecr-push", header: basic("eventbridge:b4s1c-pa55"), want: 401},
	}
	runCases(t, "ecr", append(cases, commonCases("ecr-push", "X-Api-Key", false)...))
	basicCases := []httpCase{
		{name: "basic auth", fixture: "ecr-push", header: basic("eventbridge:b4s1c-pa55"), want: 202, trig: []string{"ecr"}},
		{name: "basic auth, other password", fixture: "ecr-push", header: basic("eventbridge:guess"), want: 403},
		{name: "basic auth, not base64", fixture: "ecr-push", header: map[string]string{"Authorization": "Basic %%%"}, want: 403},
		{name: "no authorization", fixture: "ecr-push", header: map[string]string{"X-Api-Key": ""}, want: 401},
	}
	runCases(t, "ecr-basic", basicCases)
}

func TestCDEvents(t *testing.T) {
	cases := []httpCase{
		{name: "structured artifact published", fixture: "cdevents-artifact-published", want: 202, trig: []string{"dist-test"}},
		// By digest only: the tag catalogs of the repository.
		{name: "binary, digest only", fixture: "cdevents-artifact-published-binary", want: 202, trig: []string{"dist-test", "dist-test-v1"}},
		{name: "npm artifact", fixture: "cdevents-artifact-published-npm", want: 202},
		{name: "pipeline run finished", fixture: "cdevents-pipelinerun-finished", want: 202},
		{name: "no subject", fixture: "cdevents-artifact-published", body: []byte(`{"specversion":"1.0","id":"1","source":"/s","type":"dev.cdevents.artifact.published.0.2.0","datacontenttype":"application/json","data":{}}`), want: 400},
		{name: "subject not a purl", fixture: "cdevents-artifact-published", body: []byte(`{"specversion":"1.0","id":"1","source":"/s","type":"dev.cdevents.artifact.published.0.2.0","datacontenttype":"application/json","data":{"subject":{"id":"registry.example.test/acme/x:v1"}}}`), want: 400},
		{name: "repository_url without repository", fixture: "cdevents-artifact-published", body: []byte(`{"specversion":"1.0","id":"1","source":"/s","type":"dev.cdevents.artifact.published.0.2.0","datacontenttype":"application/json","data":{"subject":{"id":"pkg:oci/x@sha256%3Aab?repository_url=registry.example.test"}}}`), want: 400},
		{name: "purl with invalid digest", fixture: "cdevents-artifact-published", body: []byte(`{"specversion":"1.0","id":"1","source":"/s","type":"dev.cdevents.artifact.published.0.2.0","datacontenttype":"application/json","data":{"subject":{"id":"pkg:oci/x@sha256%3Aab?repository_url=registry.example.test/acme/x"}}}`), want: 400},
		{name: "no id", fixture: "cdevents-artifact-published", body: []byte(`{"specversion":"1.0","source":"/s","type":"dev.cdevents.artifact.published.0.2.0","data":{}}`), want: 400},
	}
	common := commonCases("cdevents-artifact-published", "Authorization", false)
	for i := range common {
		if common[i].name == "unsupported content type" {
			common[i].header = map[string]string{"Content-Type": "text/plain"}
		}
	}
	runCases(t, "cd", append(cases, common...))
}

// TestCloudSendersRedelivery: the same delivery twice triggers once, for
// every new sender that names its deliveries.
func TestCloudSendersRedelivery(t *testing.T) {
	key := garKey(t)
	rc, rec := newTestReceiver(t)
	for _, tc := range []struct{ fixture, receiver string }{
		{"gar-push", "gar"},                          // Pub/Sub message id
		{"nexus-component-created", "nexus"},         // X-Nexus-Webhook-Delivery
		{"ecr-push", "ecr"},                          // event id
		{"cdevents-artifact-published", "cd"},        // CloudEvent id
		{"cdevents-artifact-published-binary", "cd"}, // binary mode
	} {
		for i := range 2 {
			rec.reset()
			f := loadFixture(t, tc.fixture)
			if tc.receiver == "gar" {
				// A fresh token each time: only the message id repeats.
				f.header.Set("Authorization", "Bearer "+garToken(t, key, nil))
			}
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, f.request(pathOf(t, rc, tc.receiver)))
			if want := 1 - i; w.Code != 202 || len(rec.catalogs()) < want || i == 1 && len(rec.catalogs()) != 0 {
				t.Fatalf("%s delivery %d: %d, triggers %v", tc.fixture, i+1, w.Code, rec.catalogs())
			}
		}
	}
}
