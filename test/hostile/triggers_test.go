package hostile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// request is one hostile trigger request.
type request struct {
	name    string
	method  string // POST when empty
	path    string
	headers map[string]string
	body    []byte
	// chunked sends the body without a Content-Length, so the server
	// cannot refuse it from the header and has to count while reading.
	chunked bool

	status int
	// body must hold this (the error says what was wrong).
	say string
	// metric, when set, must grow by one: catalogsync_webhook_events_total
	// with these labels.
	metric []string
}

func (e *env) send(t *testing.T, r request) (int, string) {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader = bytes.NewReader(r.body)
	if r.chunked {
		body = io.MultiReader(body) // hides the length from net/http
	}
	req, err := http.NewRequest(method, e.cs.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pushBody is a generic-receiver notification for the catalog's tag.
var pushBody = []byte(`{"repository":"acme/catalog","tag":"v1"}`)

func signed(secret string, body []byte, contentType string) map[string]string {
	return map[string]string{"X-Signature-256": webhook.Sign(secret, body), "Content-Type": contentType}
}

// distributionEnvelope is a Distribution notification of a push of the
// catalog's tag, with event id id.
func (e *env) distributionEnvelope(id string) []byte {
	return []byte(fmt.Sprintf(`{"events":[{"id":%q,"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":%q,"repository":"acme/catalog","tag":"v1","url":"http://%s/v2/acme/catalog/manifests/%s"},"request":{"host":%q}}]}`,
		id, e.goodDigest, e.reg.Host, e.goodDigest, e.reg.Host))
}

// zotEvent is a structured-mode CloudEvent announcing a push of the tag.
func (e *env) zotEvent(id string) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"http://%s","type":"zotregistry.image.updated","datacontenttype":"application/json","data":{"name":"acme/catalog","reference":"v1","digest":%q}}`,
		id, e.reg.Host, e.goodDigest))
}

const distType = "application/vnd.docker.distribution.events.v2+json"

func hostileRequests(e *env) []request {
	big := bytes.Repeat([]byte(" "), 2<<20) // twice the 1 MiB cap
	bigJSON := append(append([]byte(`{"repository":"acme/catalog","tag":"v1","pad":"`), bytes.Repeat([]byte("x"), 2<<20)...), `"}`...)
	auth := map[string]string{"Authorization": registrySecret, "Content-Type": distType}
	ev := func(ct string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + eventsToken, "Content-Type": ct}
	}
	return []request{
		// Generic HMAC receiver.
		{name: "webhook-forged-signature", path: "/hooks/ci", body: pushBody,
			headers: signed("not-the-secret", pushBody, "application/json"),
			status:  http.StatusForbidden, metric: []string{`source="generic"`, `outcome="forbidden"`}},
		{name: "webhook-signature-of-another-body", path: "/hooks/ci", body: []byte(`{"repository":"acme/catalog","tag":"v2"}`),
			headers: signed(ciSecret, pushBody, "application/json"),
			status:  http.StatusForbidden, metric: []string{`source="generic"`, `outcome="forbidden"`}},
		{name: "webhook-malformed-signature", path: "/hooks/ci", body: pushBody,
			headers: map[string]string{"X-Signature-256": "sha256=zz", "Content-Type": "application/json"},
			status:  http.StatusForbidden, metric: []string{`source="generic"`, `outcome="forbidden"`}},
		{name: "webhook-no-signature", path: "/hooks/ci", body: pushBody,
			headers: map[string]string{"Content-Type": "application/json"},
			status:  http.StatusUnauthorized, metric: []string{`source="generic"`, `outcome="unauthorized"`}},
		{name: "webhook-oversized-body", path: "/hooks/ci", body: bigJSON,
			headers: signed(ciSecret, bigJSON, "application/json"),
			status:  http.StatusRequestEntityTooLarge, say: "exceeds the 1048576 byte limit",
			metric: []string{`source="generic"`, `outcome="too_large"`}},
		{name: "webhook-oversized-body-chunked", path: "/hooks/ci", body: big, chunked: true,
			headers: signed(ciSecret, big, "application/json"),
			status:  http.StatusRequestEntityTooLarge, say: "body exceeds the 1048576 byte limit",
			metric: []string{`source="generic"`, `outcome="too_large"`}},
		{name: "webhook-wrong-content-type", path: "/hooks/ci", body: pushBody,
			headers: signed(ciSecret, pushBody, "text/plain"),
			status:  http.StatusUnsupportedMediaType, say: `unsupported content type "text/plain": want application/json`,
			metric: []string{`source="generic"`, `outcome="invalid"`}},
		{name: "webhook-malformed-json", path: "/hooks/ci", body: []byte(`{"repository":`),
			headers: signed(ciSecret, []byte(`{"repository":`), "application/json"),
			status:  http.StatusBadRequest, say: "invalid JSON",
			metric: []string{`source="generic"`, `outcome="invalid"`}},
		{name: "webhook-get", method: http.MethodGet, path: "/hooks/ci",
			status: http.StatusMethodNotAllowed},

		// Distribution receiver (static header secret).
		{name: "distribution-forged-secret", path: "/hooks/registry", body: e.distributionEnvelope("forged-1"),
			headers: map[string]string{"Authorization": "Bearer not-the-secret", "Content-Type": distType},
			status:  http.StatusForbidden, metric: []string{`source="distribution"`, `outcome="forbidden"`}},
		{name: "distribution-no-secret", path: "/hooks/registry", body: e.distributionEnvelope("forged-2"),
			headers: map[string]string{"Content-Type": distType},
			status:  http.StatusUnauthorized, metric: []string{`source="distribution"`, `outcome="unauthorized"`}},
		{name: "distribution-wrong-content-type", path: "/hooks/registry", body: e.distributionEnvelope("ct-1"),
			headers: map[string]string{"Authorization": registrySecret, "Content-Type": "application/x-www-form-urlencoded"},
			status:  http.StatusUnsupportedMediaType, say: "want application/vnd.docker.distribution.events.v2+json",
			metric: []string{`source="distribution"`, `outcome="invalid"`}},
		{name: "distribution-malformed-json", path: "/hooks/registry", body: []byte(`{"events":[{"id":`), headers: auth,
			status: http.StatusBadRequest, say: "invalid JSON envelope",
			metric: []string{`source="distribution"`, `outcome="invalid"`}},

		// CloudEvents endpoint (token).
		{name: "events-no-token", path: "/events", body: e.zotEvent("no-token"),
			headers: map[string]string{"Content-Type": "application/cloudevents+json"},
			status:  http.StatusUnauthorized},
		{name: "events-forged-token", path: "/events", body: e.zotEvent("forged"),
			headers: map[string]string{"Authorization": "Bearer not-the-token", "Content-Type": "application/cloudevents+json"},
			status:  http.StatusForbidden},
		{name: "events-oversized-body", path: "/events", body: big, headers: ev("application/cloudevents+json"),
			status: http.StatusRequestEntityTooLarge, say: "exceeds the 1048576 byte limit"},
		{name: "events-wrong-content-type", path: "/events", body: e.zotEvent("ct"), headers: ev("text/plain"),
			status: http.StatusUnsupportedMediaType, say: `unsupported content type "text/plain": want a CloudEvent`},
		{name: "events-malformed-json", path: "/events", body: []byte(`{"specversion":"1.0","id":`), headers: ev("application/cloudevents+json"),
			status: http.StatusBadRequest, say: "invalid CloudEvent"},
		{name: "events-invalid-cloudevent", path: "/events", body: []byte(`{"specversion":"1.0","type":"zotregistry.image.updated"}`),
			headers: ev("application/cloudevents+json"),
			status:  http.StatusBadRequest, say: "source: REQUIRED"},
		{name: "events-malformed-batch", path: "/events", body: []byte(`[{"specversion":"1.0"`), headers: ev("application/cloudevents-batch+json"),
			status: http.StatusBadRequest, say: "invalid CloudEvents batch"},

		// REST API.
		{name: "api-wrong-content-type", path: "/api/v1/catalogs/" + catalogName + "/sync", body: []byte(`{"reason":"x"}`),
			headers: map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer " + apiToken},
			status:  http.StatusUnsupportedMediaType, say: "must be application/json"},
		{name: "api-malformed-json", path: "/api/v1/catalogs/" + catalogName + "/sync", body: []byte(`{"reason":`),
			headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + apiToken},
			status:  http.StatusBadRequest, say: "not a sync request"},
		{name: "api-oversized-body", path: "/api/v1/catalogs/" + catalogName + "/sync", body: bytes.Repeat([]byte(" "), 8<<10),
			headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + apiToken},
			status:  http.StatusBadRequest, say: "larger than 4096 bytes"},
		{name: "api-traversal-in-name", path: "/api/v1/catalogs/..%2F..%2Fetc/sync",
			headers: map[string]string{"Authorization": "Bearer " + apiToken},
			status:  http.StatusBadRequest, say: "DNS-1123"},
		{name: "api-without-token", path: "/api/v1/catalogs/" + catalogName + "/sync", body: []byte(`{"reason":"x"}`),
			headers: map[string]string{"Content-Type": "application/json"},
			status:  http.StatusUnauthorized, say: "bearer token"},
	}
}

// runRequest sends one hostile request and checks its answer, and that it
// started no sync: a trigger queues an operation synchronously, before
// the answer, so the catalog would show it as queued or running at once.
func runRequest(t *testing.T, e *env, r request) {
	before := e.catalog(t)
	if before.LastSync == nil {
		t.Fatal("no last sync to compare with")
	}
	var was float64
	if r.metric != nil {
		was = e.metric(t, "catalogsync_webhook_events_total", r.metric...)
	}
	code, body := e.send(t, r)
	if code != r.status {
		t.Errorf("status %d, want %d: %s", code, r.status, body)
	}
	if !strings.Contains(body, r.say) {
		t.Errorf("answer %q does not say %q", body, r.say)
	}
	after := e.catalog(t)
	if after.Running != nil || after.Queued != nil || after.LastSync.ID != before.LastSync.ID {
		t.Errorf("a sync started: running %+v queued %+v last %s (was %s)", after.Running, after.Queued, after.LastSync.ID, before.LastSync.ID)
	}
	if r.metric != nil {
		if now := e.metric(t, "catalogsync_webhook_events_total", r.metric...); now != was+1 {
			t.Errorf("webhook_events_total{%s} went from %v to %v, want +1", strings.Join(r.metric, ","), was, now)
		}
	}
	t.Logf("RESULT %s | %d %s", r.name, code, strings.TrimSpace(firstLine(body)))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// runReplay sends an authentic trigger twice with the same delivery id:
// the first starts a sync, the second is acknowledged and starts none.
func runReplay(t *testing.T, e *env, name string, r request, duplicateMetric []string) {
	before := e.catalog(t)
	syncs := e.syncs(t)
	code, body := e.send(t, r)
	if code != http.StatusAccepted {
		t.Fatalf("first delivery: %d %s", code, body)
	}
	var first operation
	eventually(t, "the first delivery's sync", 30*time.Second, func() bool {
		v := e.catalog(t)
		if v.Running != nil || v.Queued != nil || v.LastSync == nil || v.LastSync.ID == before.LastSync.ID {
			return false
		}
		first = *v.LastSync
		return true
	})
	if first.State != "Succeeded" || first.Result == nil || first.Result.Action != "UpToDate" {
		t.Fatalf("first delivery's sync: %s %+v %+v", first.State, first.Result, first.Error)
	}
	if got := e.syncs(t); got != syncs+1 {
		t.Fatalf("syncs_total %v after the first delivery, want %v", got, syncs+1)
	}
	var dup float64
	if duplicateMetric != nil {
		dup = e.metric(t, "catalogsync_webhook_events_total", duplicateMetric...)
	}

	code, body = e.send(t, r)
	if code != http.StatusAccepted {
		t.Errorf("replay: %d %s, want 202 (acknowledged, so the sender stops)", code, body)
	}
	after := e.catalog(t)
	if after.Running != nil || after.Queued != nil || after.LastSync.ID != first.ID {
		t.Errorf("the replay started a sync: running %+v queued %+v last %s", after.Running, after.Queued, after.LastSync.ID)
	}
	// Past the engine's settle time, nothing ran either.
	time.Sleep(time.Second)
	if got := e.syncs(t); got != syncs+1 {
		t.Errorf("syncs_total %v after the replay, want %v", got, syncs+1)
	}
	if duplicateMetric != nil {
		if now := e.metric(t, "catalogsync_webhook_events_total", duplicateMetric...); now != dup+1 {
			t.Errorf("duplicate outcome went from %v to %v, want +1", dup, now)
		}
	}
	t.Logf("RESULT %s | first 202 and one sync (%s), replay %d %q and no sync", name, first.Result.Action, code, strings.TrimSpace(firstLine(body)))
}

// readTimeout is serve's --read-timeout in this suite.
const readTimeout = 3 * time.Second

// trickle sends a webhook's headers and then its body a byte a second,
// unauthenticated: serve must drop the connection after --read-timeout,
// not hold it (and a goroutine and buffer) for as long as the client likes.
func trickle(t *testing.T, e *env) {
	conn, err := net.Dial("tcp", e.cs.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /hooks/ci HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", e.cs.Addr)
	start := time.Now()
	for time.Since(start) < 4*readTimeout {
		if _, err := conn.Write([]byte("{")); err != nil {
			break // reset by serve
		}
		conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(make([]byte, 512)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break // closed by serve (with or without an answer)
		}
	}
	held := time.Since(start)
	t.Logf("trickled body: connection closed after %v (read timeout %v)", held.Round(100*time.Millisecond), readTimeout)
	if held >= 4*readTimeout {
		t.Fatalf("a trickled body held the connection for %v", held)
	}
}
