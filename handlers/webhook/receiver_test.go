package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

func TestReceiverConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"no receivers", Config{}, true},
		{"no secret", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeHarbor}}}, false},
		{"no secret, insecure", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeHarbor, Insecure: true}}}, true},
		{"unknown type", Config{Receivers: []ReceiverConfig{{Name: "a", Type: "sonatype-iq", Secret: "s"}}}, false},
		{"bad name", Config{Receivers: []ReceiverConfig{{Name: "A b", Type: TypeHarbor, Secret: "s"}}}, false},
		{"duplicate name", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeHarbor, Secret: "s"}, {Name: "a", Type: TypeZot, Secret: "s", Path: "/z"}}}, false},
		{"duplicate path", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeHarbor, Secret: "s", Path: "/x"}, {Name: "b", Type: TypeZot, Secret: "s", Path: "/x"}}}, false},
		{"relative path", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeHarbor, Secret: "s", Path: "x"}}}, false},
		{"path for a sender that cannot authenticate", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeDockerHub, Secret: "s", Path: "/hooks/a"}}}, false},
		{"bad host", Config{Receivers: []ReceiverConfig{{Name: "a", Type: TypeZot, Secret: "s", Host: "a/b"}}}, false},
		{"alias in two groups", Config{HostAliases: []HostAlias{{Host: "a.example.test", Aliases: []string{"c.example.test"}}, {Host: "b.example.test", Aliases: []string{"c.example.test"}}}}, false},
		{"bad alias", Config{HostAliases: []HostAlias{{Host: "a.example.test", Aliases: []string{"not a host"}}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReceiver(tc.cfg, testCatalogs, &recorder{})
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Fatalf("%v does not wrap ErrConfig", err)
			}
		})
	}
	if _, err := NewReceiver(Config{}, nil, &recorder{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no lister: %v", err)
	}
}

func TestReceiverPaths(t *testing.T) {
	rc, _ := newTestReceiver(t)
	want := map[string]string{
		"dist": "/hooks/dist",
		"gh":   "/hooks/gh",
		// Flux's scheme: hex sha256 of the token followed by the name
		// (computed with sha256sum).
		"hub":  "/hooks/b57d557b206c8522fb2fa18738635f127a9023e57ddc22ff31e95612cfcdd340",
		"quay": "/hooks/44cadb68aa5393efed9d7b8d95db607f6cfbbf3b57bdb8249535f2581d993d0a",
	}
	for name, p := range want {
		if got := pathOf(t, rc, name); got != p {
			t.Errorf("%s: path %s, want %s", name, got, p)
		}
	}
	if len(rc.Endpoints()) != len(testConfig.Receivers) {
		t.Fatalf("%d endpoints", len(rc.Endpoints()))
	}
}

func TestReceiverUnknownPath(t *testing.T) {
	rc, rec := newTestReceiver(t)
	f := loadFixture(t, "distribution-push")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, f.request("/hooks/nobody"))
	if w.Code != 404 || len(rec.catalogs()) != 0 {
		t.Fatalf("status %d, triggers %v", w.Code, rec.catalogs())
	}
}

func TestReceiverInsecure(t *testing.T) {
	rec := &recorder{}
	rc, err := NewReceiver(Config{Receivers: []ReceiverConfig{
		{Name: "open", Type: TypeDistribution, Insecure: true},
		{Name: "hub", Type: TypeDockerHub, Insecure: true},
	}}, testCatalogs, rec)
	if err != nil {
		t.Fatal(err)
	}
	f := loadFixture(t, "distribution-push")
	f.header.Del("Authorization")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, f.request("/hooks/open"))
	if w.Code != 202 || !slices.Equal(rec.catalogs(), []string{"dist"}) {
		t.Fatalf("status %d, triggers %v", w.Code, rec.catalogs())
	}
	// Without a token there is nothing to derive a secret path from.
	if p := pathOf(t, rc, "hub"); p != "/hooks/hub" {
		t.Fatalf("insecure dockerhub path %s", p)
	}
}

func TestReceiverRedelivery(t *testing.T) {
	rc, rec := newTestReceiver(t, WithDedupe(16, time.Hour))
	send := func(fixture, receiver string, edit func(*fixture)) int {
		f := loadFixture(t, fixture)
		if edit != nil {
			edit(&f)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, f.request(pathOf(t, rc, receiver)))
		return w.Code
	}
	for _, tc := range []struct{ fixture, receiver string }{
		{"github-package-published", "gh"}, // X-GitHub-Delivery
		{"distribution-push", "dist"},      // event ids
		{"eventgrid-push", "eg"},           // CloudEvent id
		{"zot-image-updated", "zot"},
	} {
		rec.reset()
		if c := send(tc.fixture, tc.receiver, nil); c != 202 || len(rec.catalogs()) != 1 {
			t.Fatalf("%s: first delivery %d, triggers %v", tc.fixture, c, rec.catalogs())
		}
		if c := send(tc.fixture, tc.receiver, nil); c != 202 || len(rec.catalogs()) != 1 {
			t.Fatalf("%s: redelivery %d, triggers %v", tc.fixture, c, rec.catalogs())
		}
	}
	// Another delivery id is another delivery, even with the same body.
	rec.reset()
	send("github-package-published", "gh", func(f *fixture) { f.header.Set("X-GitHub-Delivery", "another") })
	if len(rec.catalogs()) != 1 {
		t.Fatalf("new delivery id: triggers %v", rec.catalogs())
	}
	// Senders without delivery ids are never deduplicated.
	rec.reset()
	send("harbor-push-artifact", "harbor", nil)
	send("harbor-push-artifact", "harbor", nil)
	if len(rec.catalogs()) != 2 {
		t.Fatalf("harbor twice: triggers %v", rec.catalogs())
	}
}

// Past the window, a redelivery is heard again: with a short window the
// sender keeps redelivering until one triggers (bounded wait on state).
func TestReceiverRedeliveryAfterWindow(t *testing.T) {
	rc, rec := newTestReceiver(t, WithDedupe(16, 200*time.Millisecond))
	send := func() {
		f := loadFixture(t, "github-package-published")
		rc.ServeHTTP(httptest.NewRecorder(), f.request(pathOf(t, rc, "gh")))
	}
	send()
	if len(rec.catalogs()) != 1 {
		t.Fatalf("first delivery: triggers %v", rec.catalogs())
	}
	eventually(t, "a redelivery after the window to trigger", func() bool {
		send()
		return len(rec.catalogs()) == 2
	})
}

func TestReceiverForgedDoesNotBurnDeliveryID(t *testing.T) {
	rc, rec := newTestReceiver(t)
	f := loadFixture(t, "github-package-published")
	forged := f.request(pathOf(t, rc, "gh"))
	forged.Header.Set("X-Hub-Signature-256", Sign("guess", f.body))
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, forged)
	if w.Code != 403 {
		t.Fatalf("forged: %d", w.Code)
	}
	w = httptest.NewRecorder()
	rc.ServeHTTP(w, f.request(pathOf(t, rc, "gh")))
	if w.Code != 202 || len(rec.catalogs()) != 1 {
		t.Fatalf("genuine after forged: %d, triggers %v", w.Code, rec.catalogs())
	}
}

// ctxRecorder keeps the context each trigger got.
type ctxRecorder struct {
	recorder
	ctxs []context.Context
}

func (r *ctxRecorder) Trigger(ctx context.Context, catalog, reason string) {
	r.ctxs = append(r.ctxs, ctx)
	r.recorder.Trigger(ctx, catalog, reason)
}

func TestReceiverTriggerContextAndReason(t *testing.T) {
	rec := &ctxRecorder{}
	rc, err := NewReceiver(testConfig, testCatalogs, rec)
	if err != nil {
		t.Fatal(err)
	}
	f := loadFixture(t, "distribution-push")
	ctx, cancel := context.WithCancel(context.Background())
	req := f.request("/hooks/dist").WithContext(ctx)
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	cancel()
	if w.Code != 202 || len(rec.ctxs) != 1 {
		t.Fatalf("status %d, %d triggers", w.Code, len(rec.ctxs))
	}
	// The engine queues the sync: the request's end must not cancel it.
	if rec.ctxs[0].Err() != nil {
		t.Fatal("trigger context ends with the request")
	}
	reason := rec.calls[0].reason
	if !strings.Contains(reason, "webhook dist") || !strings.Contains(reason, "registry.example.com/acme/operator-catalog:v4.16@"+digIndex) {
		t.Fatalf("reason %q", reason)
	}
}

func TestReceiverBodyLimit(t *testing.T) {
	rec := &recorder{}
	cfg := Config{Receivers: []ReceiverConfig{{Name: "dist", Type: TypeDistribution, Secret: "3f6c1d0e9a8b7c6d5e4f"}}, MaxBodyBytes: 512}
	rc, err := NewReceiver(cfg, testCatalogs, rec)
	if err != nil {
		t.Fatal(err)
	}
	f := loadFixture(t, "distribution-push") // about 1.5 KiB
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, f.request("/hooks/dist"))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", w.Code)
	}
	// Without Content-Length (chunked), the limit holds while reading.
	req := f.request("/hooks/dist")
	req.ContentLength = -1
	w = httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge || len(rec.catalogs()) != 0 {
		t.Fatalf("chunked: status %d, triggers %v", w.Code, rec.catalogs())
	}
}

func TestReceiverCatalogListChanges(t *testing.T) {
	rec := &recorder{}
	var cats mutableLister
	rc, err := NewReceiver(testConfig, &cats, rec)
	if err != nil {
		t.Fatal(err)
	}
	f := loadFixture(t, "acr-push")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, f.request("/hooks/acr"))
	if w.Code != 202 || len(rec.catalogs()) != 0 {
		t.Fatalf("no catalogs: %d %v", w.Code, rec.catalogs())
	}
	cats.set([]catalogspec.Catalog{{Name: "late", Image: catalogspec.ParseImage("acmecatalogs.acr.example.test/acme/operator-catalog:v4.16")}})
	w = httptest.NewRecorder()
	f.body = []byte(strings.Replace(string(f.body), "cb8c3971", "cb8c3972", 1)) // a new event id
	rc.ServeHTTP(w, f.request("/hooks/acr"))
	if !slices.Equal(rec.catalogs(), []string{"late"}) {
		t.Fatalf("triggers %v", rec.catalogs())
	}
}

// mutableLister is a catalog list that changes between requests.
type mutableLister struct {
	mu   sync.Mutex
	cats []catalogspec.Catalog
}

func (l *mutableLister) set(c []catalogspec.Catalog) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cats = c
}

func (l *mutableLister) Catalogs() []catalogspec.Catalog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cats
}

// TestReceiverConcurrentRedeliveries: a sender retrying in parallel gets
// exactly one trigger per delivery id.
func TestReceiverConcurrentRedeliveries(t *testing.T) {
	rc, rec := newTestReceiver(t)
	f := loadFixture(t, "github-package-published")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := f
			g.header = f.header.Clone()
			if i%2 == 1 {
				g.header.Set("X-GitHub-Delivery", "second-delivery")
			}
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, g.request("/hooks/gh"))
			if w.Code != 202 {
				t.Errorf("status %d", w.Code)
			}
		}()
	}
	wg.Wait()
	if got := rec.catalogs(); len(got) != 2 {
		t.Fatalf("triggers %v, want one per delivery id", got)
	}
}

// A receiver that accepts unauthenticated requests is warned about; an
// authenticated one (a secret, or signed tokens without a secret) is not.
func TestReceiverInsecureWarning(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gar := testConfig.Receivers[slices.IndexFunc(testConfig.Receivers, func(c ReceiverConfig) bool { return c.Type == TypeGAR })]
	_, err := NewReceiver(Config{Receivers: []ReceiverConfig{
		{Name: "open", Type: TypeDistribution, Insecure: true},
		{Name: "keyed", Type: TypeDistribution, Insecure: true, Secret: "s3cret"},
		{Name: "plain", Type: TypeHarbor, Secret: "s3cret"},
		gar,
	}}, testCatalogs, &recorder{}, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		warned = append(warned, fmt.Sprint(rec["receiver"]))
	}
	if !slices.Equal(warned, []string{"open"}) {
		t.Errorf("warned about %q, want [open]", warned)
	}
}

// A path derived from a token (a credential) is flagged secret, so it
// stays out of metrics and logs; an ordinary path is not hidden.
func TestEndpointSecretFlag(t *testing.T) {
	rc, _ := newTestReceiver(t)
	for _, e := range rc.Endpoints() {
		if want := e.Name == "quay" || e.Name == "hub"; e.Secret != want {
			t.Errorf("%s (%s): Secret %v, want %v", e.Name, e.Type, e.Secret, want)
		}
	}
	open, err := NewReceiver(Config{Receivers: []ReceiverConfig{{Name: "hub", Type: TypeDockerHub, Insecure: true}}}, testCatalogs, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if e := open.Endpoints()[0]; e.Secret {
		t.Errorf("insecure %s at %s: flagged secret", e.Name, e.Path)
	}
}

// Marking a signed-token receiver insecure keeps its token check: nobody
// triggers syncs through it without a valid token.
func TestReceiverInsecureKeyAuth(t *testing.T) {
	gar := testConfig.Receivers[slices.IndexFunc(testConfig.Receivers, func(c ReceiverConfig) bool { return c.Type == TypeGAR })]
	gar.Insecure = true
	rec := &recorder{}
	rc, err := NewReceiver(Config{Receivers: []ReceiverConfig{gar}}, testCatalogs, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"", "Bearer not-a-token"} {
		f := loadFixture(t, "gar-push")
		f.header.Del("Authorization")
		if auth != "" {
			f.header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, f.request(pathOf(t, rc, gar.Name)))
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusForbidden || len(rec.catalogs()) != 0 {
			t.Errorf("Authorization %q: status %d, triggers %v", auth, w.Code, rec.catalogs())
		}
	}
}

// In a notification of several pushes, one that matches no catalog, or
// one whose catalog was already triggered, does not stop the pushes and
// catalogs after it from being triggered.
func TestDispatchGoesOn(t *testing.T) {
	m, err := NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	cats := []catalogspec.Catalog{
		{Name: "v1", Image: catalogspec.ParseImage("registry.example.test/acme/cat:v1")},
		{Name: "v2", Image: catalogspec.ParseImage("registry.example.test/acme/cat:v2")},
	}
	p := func(tag string) Push { return Push{Host: "registry.example.test", Repository: "acme/cat", Tag: tag} }
	rec := &recorder{}
	// v9 matches nothing; v1 then the tagless push (v1 again, then v2).
	n := Dispatch(context.Background(), m, cats, []Push{p("v9"), p("v1"), p("")}, rec, "test", slog.New(slog.DiscardHandler))
	if got := rec.catalogs(); n != 2 || !slices.Equal(got, []string{"v1", "v2"}) {
		t.Errorf("triggered %d: %v, want v1 and v2 once each", n, got)
	}
}

// A body of exactly the size limit is read; one byte more is refused as
// too large.
func TestReadBodyAtLimit(t *testing.T) {
	const max = 16
	for size, want := range map[int]int{max: 0, max + 1: http.StatusRequestEntityTooLarge} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", strings.NewReader(strings.Repeat("x", size)))
		body, status, err := ReadBody(httptest.NewRecorder(), r, max)
		if status != want || (want == 0) != (err == nil && len(body) == size) {
			t.Errorf("%d bytes: status %d, %d bytes read, %v; want status %d", size, status, len(body), err, want)
		}
	}
}

// The log line naming a notification's pushes is bounded (three pushes
// named, 256 bytes kept), counts the rest, and places its commas.
func TestDescribeIsBounded(t *testing.T) {
	p := func(repo string) Push { return Push{Host: "r.example.test", Repository: repo, Tag: "v1"} }
	for _, tc := range []struct {
		pushes []Push
		want   string
	}{
		{[]Push{p("a")}, "r.example.test/a:v1"},
		{[]Push{p("a"), p("b")}, "r.example.test/a:v1, r.example.test/b:v1"},
		{[]Push{p("a"), p("b"), p("c"), p("d"), p("e")}, "r.example.test/a:v1, r.example.test/b:v1, r.example.test/c:v1 and 2 more"},
	} {
		if got := describe(tc.pushes); got != tc.want {
			t.Errorf("describe: %q, want %q", got, tc.want)
		}
	}
	// "r.example.test/" and ":v1" are 18 bytes of the 256 kept.
	exact, long := p(strings.Repeat("a", 256-18)), p(strings.Repeat("a", 257-18))
	if got := describe([]Push{exact}); got != exact.String() {
		t.Errorf("256 bytes: %q, want it whole", got)
	}
	if got := describe([]Push{long}); got != long.String()[:256]+"…" {
		t.Errorf("257 bytes: %q, want 256 and an ellipsis", got)
	}
}
