package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// Docker Hub and Quay cannot authenticate, so their receivers listen at a
// path derived from a secret. After deliveries to both, neither the secret
// nor the path shows in /metrics, the REST API or any log line.
func TestServeKeepsWebhookSecrets(t *testing.T) {
	const hubSecret, quaySecret = "hub-secret-4f0c2a", "quay-secret-9b7e1d"
	hubPath, quayPath := webhook.SecretPath(hubSecret, "hub"), webhook.SecretPath(quaySecret, "quay")
	t.Setenv("QUAY_HOOK_SECRET", quaySecret)
	cfg := writeServeConfig(t, fmt.Sprintf(`storage:
  dir: %s
catalogs:
- name: hooked
  image: 127.0.0.1:1/acme/operator-catalog:v4.16
webhooks:
  hostAliases: [{host: "127.0.0.1:1", aliases: [quay.example.test]}]
  receivers:
  - {name: hub, type: dockerhub, secret: %s, host: "127.0.0.1:1"}
  - {name: quay, type: quay, secret: env:QUAY_HOOK_SECRET}
`, t.TempDir(), hubSecret))
	s := startServe(t, "--config", cfg, "--log-level", "debug")
	base := "http://" + s.addr
	json := map[string]string{"Content-Type": "application/json"}
	hub := `{"push_data":{"tag":"v4.16"},"repository":{"repo_name":"acme/operator-catalog","namespace":"acme","name":"operator-catalog"}}`
	quay := `{"repository":"acme/operator-catalog","docker_url":"quay.example.test/acme/operator-catalog","updated_tags":["v4.16"]}`
	for _, d := range []struct{ path, body string }{{hubPath, hub}, {quayPath, quay}, {hubPath, `{"push_data":{"tag":"v1"},"repository":{"repo_name":"other/repo"}}`}} {
		if code, body := do(t, "POST", base+d.path, d.body, json); code != 202 {
			t.Fatalf("delivery: %d %s", code, body)
		}
	}
	// A wrong token is a 404 like any unknown path.
	if code, _ := do(t, "POST", base+"/hooks/"+strings.Repeat("0", 64), hub, json); code != 404 {
		t.Fatalf("wrong token: %d", code)
	}
	eventually(t, "the triggered sync to finish", 30*time.Second, func() bool { return idle(t, s.addr) })

	var seen []string
	seen = append(seen, string(scrape(t, s.addr)))
	for _, p := range []string{"/api/v1/catalogs", "/api/v1/catalogs/hooked"} {
		_, body := do(t, "GET", base+p, "", nil)
		seen = append(seen, body)
	}
	if op := lastOp(t, s.addr); op != "" {
		_, body := do(t, "GET", base+"/api/v1/operations/"+strings.TrimPrefix(op, "sync"), "", nil)
		seen = append(seen, body)
	}
	s.stop()
	<-s.code
	s.code <- 0 // for the cleanup
	logs := s.logs.String()
	seen = append(seen, logs)
	if !strings.Contains(logs, `route=/hooks/{token}`) {
		t.Errorf("request log lines lack the placeholder route")
	}
	for _, text := range seen {
		for _, secret := range []string{hubSecret, quaySecret, hubPath, quayPath, strings.TrimPrefix(hubPath, "/hooks/"), strings.TrimPrefix(quayPath, "/hooks/")} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%q shows: ...%s...", secret, text[max(0, i-200):min(len(text), i+len(secret)+50)])
			}
		}
	}
}
