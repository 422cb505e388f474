package events

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// changes records the keys the endpoint hands over.
type changes struct {
	mu   sync.Mutex
	keys []string
}

var errNotPointer = errors.New("not a pointer")

func (c *changes) Changed(bucket, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, bucket+"/"+key)
	if !strings.HasSuffix(key, "/current") {
		return errNotPointer
	}
	return nil
}

func (c *changes) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}

// minioBody is a notification as MinIO's webhook target sends it.
const minioBody = `{"EventName":"s3:ObjectCreated:Put","Key":"fleet/catalogs/cat/current","Records":[{"eventVersion":"2.0","eventSource":"minio:s3","awsRegion":"","eventTime":"2026-12-05T04:00:00.000Z","eventName":"s3:ObjectCreated:Put","userIdentity":{"principalId":"catalogsync"},"requestParameters":{"principalId":"catalogsync","region":"","sourceIPAddress":"127.0.0.1"},"responseElements":{"x-amz-id-2":"dd9025bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8","x-amz-request-id":"187D8C7A2F1B7E44","x-minio-deployment-id":"a0b1","x-minio-origin-endpoint":"http://127.0.0.1:9000"},"s3":{"s3SchemaVersion":"1.0","configurationId":"Config","bucket":{"name":"fleet","ownerIdentity":{"principalId":"catalogsync"},"arn":"arn:aws:s3:::fleet"},"object":{"key":"catalogs%2Fcat%2Fcurrent","size":312,"eTag":"5d41402abc4b2a76b9719d911017c592","contentType":"application/octet-stream","userMetadata":{"content-type":"application/octet-stream"},"sequencer":"187D8C7A2F3C1B4A"}},"source":{"host":"127.0.0.1","port":"","userAgent":"MinIO (linux; amd64) minio-go/v7.0.0"}}]}`

func notifications(t *testing.T, cfg NotifyConfig) (*Notifications, *changes, map[string]int) {
	t.Helper()
	var c changes
	outcomes := map[string]int{}
	var mu sync.Mutex
	n, err := NewNotifications(cfg, &c, WithOutcome(func(_, o string) { mu.Lock(); outcomes[o]++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	return n, &c, outcomes
}

func post(n http.Handler, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/notify", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	n.ServeHTTP(w, r)
	return w
}

// MinIO's webhook target sends its auth_token as "Bearer <token>" (or as
// is when it has two words) and the key URL-encoded in the record.
func TestNotificationFromMinIO(t *testing.T) {
	t.Parallel()
	n, c, _ := notifications(t, NotifyConfig{Token: "s3cret"})
	if w := post(n, minioBody, "Authorization", "Bearer s3cret"); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got := c.got(); len(got) != 1 || got[0] != "fleet/catalogs/cat/current" {
		t.Fatalf("handed %v", got)
	}
	if w := post(n, minioBody, "Authorization", "s3cret"); w.Code != http.StatusNoContent {
		t.Fatalf("token as is: status %d", w.Code)
	}
	head := httptest.NewRecorder()
	n.ServeHTTP(head, httptest.NewRequest(http.MethodHead, "/notify", nil))
	if head.Code != http.StatusOK {
		t.Fatalf("HEAD: %d", head.Code)
	}
}

// Without the token nothing is handed over; a configuration with no
// token must say it accepts anyone.
func TestNotificationNeedsToken(t *testing.T) {
	t.Parallel()
	n, c, outcomes := notifications(t, NotifyConfig{Token: "s3cret"})
	if w := post(n, minioBody); w.Code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", w.Code)
	}
	if w := post(n, minioBody, "Authorization", "Bearer wrong"); w.Code != http.StatusForbidden {
		t.Fatalf("wrong token: %d", w.Code)
	}
	if got := c.got(); len(got) != 0 {
		t.Fatalf("handed %v", got)
	}
	if outcomes[webhook.OutcomeUnauthorized] != 1 || outcomes[webhook.OutcomeForbidden] != 1 {
		t.Fatalf("outcomes %v", outcomes)
	}
	if _, err := NewNotifications(NotifyConfig{}, &changes{}); !errors.Is(err, webhook.ErrConfig) {
		t.Fatalf("no token, not insecure: %v", err)
	}
	open, _, _ := notifications(t, NotifyConfig{Insecure: true})
	if w := post(open, minioBody); w.Code != http.StatusNoContent {
		t.Fatalf("insecure: %d", w.Code)
	}
}

// The same records as a CloudEvent's data are handed over; CloudEvents
// of other types are not.
func TestNotificationAsCloudEvent(t *testing.T) {
	t.Parallel()
	n, c, _ := notifications(t, NotifyConfig{Insecure: true})
	ce := func(typ string) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":"1","source":"minio","type":%q,"datacontenttype":"application/json","data":%s}`, typ, minioBody)
	}
	for _, typ := range []string{"com.amazonaws.s3.ObjectCreated", "io.minio.s3.ObjectCreated:Put"} {
		if w := post(n, ce(typ), "Content-Type", "application/cloudevents+json"); w.Code != http.StatusNoContent {
			t.Fatalf("%s: %d %s", typ, w.Code, w.Body)
		}
	}
	if w := post(n, ce("dev.knative.sources.ping"), "Content-Type", "application/cloudevents+json"); w.Code != http.StatusNoContent {
		t.Fatalf("other type: %d", w.Code)
	}
	if got := c.got(); len(got) != 2 {
		t.Fatalf("handed %v", got)
	}
}

// Hostile bodies: too large, malformed, deeply nested, floods of one key
// or of many, bad escapes. Each gets an answer and hands over each
// distinct key once, at most maxRecords of them.
func TestNotificationHostileBodies(t *testing.T) {
	t.Parallel()
	n, c, _ := notifications(t, NotifyConfig{Insecure: true, MaxBodyBytes: 1 << 20})
	if w := post(n, `{"Records":[`+strings.Repeat(`{"s3":{}},`, 200000)+`{}]}`); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("too large: %d", w.Code)
	}
	for _, body := range []string{`{"Records":`, `[]`, strings.Repeat("[", 100000), `{"Records":[{"s3":{"object":{"key":{"x":1}}}}]}`} {
		if w := post(n, body); w.Code != http.StatusBadRequest {
			t.Fatalf("%.30q: %d", body, w.Code)
		}
	}
	rec := func(key string) string {
		return fmt.Sprintf(`{"s3":{"bucket":{"name":"fleet"},"object":{"key":%q}}}`, key)
	}
	same := strings.Repeat(rec("catalogs/cat/current")+",", 5000)
	if w := post(n, `{"Records":[`+same+rec("%zz")+`,{}]}`); w.Code != http.StatusNoContent {
		t.Fatalf("flood of one key: %d", w.Code)
	}
	if got := c.got(); len(got) != 1 {
		t.Fatalf("flood of one key handed %d keys", len(got))
	}
	var many []string
	for i := range 3000 {
		many = append(many, rec(fmt.Sprintf("catalogs/c%d/current", i)))
	}
	if w := post(n, `{"Records":[`+strings.Join(many, ",")+`]}`); w.Code != http.StatusNoContent {
		t.Fatalf("many keys: %d", w.Code)
	}
	if got := c.got(); len(got) != 1+maxRecords {
		t.Fatalf("many keys handed %d, want %d", len(got)-1, maxRecords)
	}
}
