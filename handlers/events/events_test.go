package events

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/storagetest"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

const fixtureDir = "../../testdata/webhooks"

// request builds a request from testdata/webhooks/<name>.{json,headers.txt}.
func request(t testing.TB, name string) *http.Request {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
	hb, err := os.ReadFile(filepath.Join(fixtureDir, name+".headers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(hb))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			r.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return r
}

// fakeEngine records what the handler asks of the sync engine.
type fakeEngine struct {
	mu       sync.Mutex
	triggers []string
	polls    int
}

func (e *fakeEngine) Trigger(_ context.Context, catalog, _ string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.triggers = append(e.triggers, catalog)
}

func (e *fakeEngine) PollDue(context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.polls++
}

func (e *fakeEngine) state() ([]string, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tr := slices.Clone(e.triggers)
	slices.Sort(tr)
	return tr, e.polls
}

type lister []catalogspec.Catalog

func (l lister) Catalogs() []catalogspec.Catalog { return l }

// openLister also accepts catalogs it does not list, as a cluster-backed
// lister whose cache lags would.
type openLister struct{ lister }

func (openLister) AcceptsUnlisted() bool { return true }

var catalogs = lister{
	{Name: "operatorhub", Image: catalogspec.ParseImage("registry.example.test/acme/operator-catalog:v4.16")},
	{Name: "harbor", Image: catalogspec.ParseImage("harbor.example.com/acme/operator-catalog:v4.16")},
	{Name: "acr", Image: catalogspec.ParseImage("acmecatalogs.acr.example.test/acme/operator-catalog:v4.16")},
	{Name: "unrelated", Image: catalogspec.ParseImage("registry.example.test/acme/other:v1")},
}

func newHandler(t testing.TB, cfg Config, l webhook.CatalogLister, opts ...Option) (*Handler, *fakeEngine) {
	t.Helper()
	e := &fakeEngine{}
	cfg.HostAliases = []webhook.HostAlias{{Host: "harbor.example.com", Aliases: []string{"harbor.example.test"}}}
	cfg.Insecure = cfg.Token == "" && cfg.Audience == ""
	h, err := New(cfg, l, e, e, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h, e
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		lister  webhook.CatalogLister
		edit    func(*http.Request)
		want    int
		trig    []string
		polls   int
	}{
		{name: "PingSource", fixture: "knative-pingsource-ping", want: 202, polls: 1},
		{name: "ClusterCatalog added (resource mode)", fixture: "apiserver-resource-add", want: 202, trig: []string{"operatorhub"}},
		{name: "ClusterCatalog spec changed", fixture: "apiserver-resource-update-spec", want: 202, trig: []string{"operatorhub"}},
		{name: "ClusterCatalog status written", fixture: "apiserver-resource-update-status", want: 202},
		{name: "ClusterCatalog added (reference mode)", fixture: "apiserver-ref-add", want: 202, trig: []string{"operatorhub"}},
		{name: "ClusterCatalog updated (reference mode)", fixture: "apiserver-ref-update", want: 202, trig: []string{"operatorhub"}},
		{name: "ClusterCatalog deleted", fixture: "apiserver-ref-add", edit: setHeader("Ce-Type", APIServerRefDelete), want: 202},
		{name: "other kind", fixture: "apiserver-resource-add-configmap", want: 202},
		{name: "unknown catalog", fixture: "apiserver-resource-add", lister: lister{{Name: "x", Image: catalogspec.ParseImage("registry.example.test/x:v1")}}, want: 202},
		{name: "unknown catalog, open lister", fixture: "apiserver-resource-add", lister: openLister{lister{{Name: "x", Image: catalogspec.ParseImage("registry.example.test/x:v1")}}}, want: 202, trig: []string{"operatorhub"}},
		{name: "invalid catalog name", fixture: "apiserver-ref-add", edit: setBody(`{"kind":"ClusterCatalog","name":"Not_A_Name","apiVersion":"olm.operatorframework.io/v1"}`), lister: openLister{catalogs}, want: 400},
		{name: "object without data", fixture: "apiserver-resource-add", edit: setBody(""), want: 400},
		{name: "object data not JSON", fixture: "apiserver-resource-add", edit: setBody("<ClusterCatalog/>"), want: 400},
		{name: "Harbor push (structured)", fixture: "harbor-cloudevents-push", want: 202, trig: []string{"harbor"}},
		{name: "Harbor delete", fixture: "harbor-cloudevents-deleted", want: 202},
		// zot's events name no host: the repository decides.
		{name: "zot push (binary)", fixture: "zot-image-updated", want: 202, trig: []string{"acr", "harbor", "operatorhub"}},
		{name: "Event Grid batch", fixture: "eventgrid-batch", want: 202, trig: []string{"acr"}},
		{name: "unknown event type", fixture: "knative-pingsource-ping", edit: setHeader("Ce-Type", "dev.example.something"), want: 202},
		{name: "not a CloudEvent", fixture: "acr-push", want: 415},
		{name: "CloudEvent without id", fixture: "knative-pingsource-ping", edit: setHeader("Ce-Id", ""), want: 400},
		{name: "structured event not JSON", fixture: "harbor-cloudevents-push", edit: setBody("{"), want: 400},
		{name: "oversized", fixture: "knative-pingsource-ping", edit: setBody(strings.Repeat("x", webhook.DefaultMaxBodyBytes+1)), want: 413},
		{name: "GET", fixture: "knative-pingsource-ping", edit: func(r *http.Request) { r.Method = http.MethodGet }, want: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lister
			if l == nil {
				l = catalogs
			}
			h, e := newHandler(t, Config{}, l)
			r := request(t, tc.fixture)
			if tc.edit != nil {
				tc.edit(r)
			}
			w := serve(h, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if w.Code == 202 && w.Body.Len() != 0 {
				t.Fatalf("202 with a body: %q", w.Body)
			}
			trig, polls := e.state()
			if !slices.Equal(trig, tc.trig) || polls != tc.polls {
				t.Fatalf("triggers %v polls %d, want %v %d", trig, polls, tc.trig, tc.polls)
			}
		})
	}
}

func setHeader(k, v string) func(*http.Request) {
	return func(r *http.Request) {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
}

func setBody(s string) func(*http.Request) {
	return func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(s))
		r.ContentLength = int64(len(s))
	}
}

func TestEventsDuplicates(t *testing.T) {
	h, e := newHandler(t, Config{}, catalogs)
	for range 3 {
		if w := serve(h, request(t, "apiserver-resource-add")); w.Code != 202 {
			t.Fatalf("status %d", w.Code)
		}
		serve(h, request(t, "knative-pingsource-ping"))
	}
	if trig, polls := e.state(); len(trig) != 1 || polls != 1 {
		t.Fatalf("redeliveries acted on: triggers %v, polls %d", trig, polls)
	}
	// The same id from another source is another event.
	r := request(t, "apiserver-resource-add")
	r.Header.Set("Ce-Source", "https://other.example.test")
	serve(h, r)
	if trig, _ := e.state(); len(trig) != 2 {
		t.Fatalf("triggers %v", trig)
	}
}

func TestEventsReferenceUpdatesThrottled(t *testing.T) {
	send := func(h *Handler, id string) {
		r := request(t, "apiserver-ref-update")
		r.Header.Set("Ce-Id", id)
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("status %d", w.Code)
		}
	}
	// A reference cannot tell our own status writes from spec changes:
	// bursts are cut to one trigger per interval.
	h, e := newHandler(t, Config{RefUpdateInterval: time.Hour}, catalogs)
	send(h, "1")
	send(h, "2")
	send(h, "3")
	if trig, _ := e.state(); len(trig) != 1 {
		t.Fatalf("triggers %v", trig)
	}
	// Past the interval an update triggers again, however many came in
	// between. The interval is short and the test waits on the triggers,
	// not on the clock: the window is the wall clock's (webhook.Dedupe).
	h, e = newHandler(t, Config{RefUpdateInterval: 200 * time.Millisecond}, catalogs)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		send(h, strconv.Itoa(i))
		if trig, _ := e.state(); len(trig) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no second trigger after the interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventsSDKModes sends events encoded by the CloudEvents SDK, as
// Knative's dispatchers do, in binary, structured and batched mode.
func TestEventsSDKModes(t *testing.T) {
	ping := event.New()
	ping.SetID("p1")
	ping.SetSource("/apis/v1/namespaces/catalogs/pingsources/nightly")
	ping.SetType(PingType)
	_ = ping.SetData(event.TextPlain, "resync")

	add := event.New()
	add.SetID("a1")
	add.SetSource("https://10.96.0.1:443")
	add.SetType(APIServerRefAdd)
	_ = add.SetData(event.ApplicationJSON, map[string]string{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog", "name": "operatorhub"})

	push := event.New()
	push.SetID("h1")
	push.SetSource("/projects/3/webhook/policies/7")
	push.SetType(webhook.HarborArtifactPushed)
	_ = push.SetData(event.ApplicationJSON, json.RawMessage(`{"resources":[{"tag":"v4.16","resource_url":"harbor.example.test/acme/operator-catalog:v4.16"}],"repository":{"repo_full_name":"acme/operator-catalog"}}`))

	ctx := context.Background()
	t.Run("binary", func(t *testing.T) {
		h, e := newHandler(t, Config{}, catalogs)
		r, err := cehttp.NewHTTPRequestFromEvent(ctx, "http://sink.example.test/events", add)
		if err != nil {
			t.Fatal(err)
		}
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if trig, _ := e.state(); !slices.Equal(trig, []string{"operatorhub"}) {
			t.Fatalf("triggers %v", trig)
		}
	})
	t.Run("structured", func(t *testing.T) {
		h, e := newHandler(t, Config{}, catalogs)
		b, err := json.Marshal(push)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(b))
		r.Header.Set("Content-Type", event.ApplicationCloudEventsJSON)
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if trig, _ := e.state(); !slices.Equal(trig, []string{"harbor"}) {
			t.Fatalf("triggers %v", trig)
		}
	})
	t.Run("batch", func(t *testing.T) {
		h, e := newHandler(t, Config{}, catalogs)
		// Two pings in a batch poll once.
		ping2 := ping.Clone()
		ping2.SetID("p2")
		r, err := cehttp.NewHTTPRequestFromEvents(ctx, "http://sink.example.test/events", []event.Event{ping, ping2, add, push})
		if err != nil {
			t.Fatal(err)
		}
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		trig, polls := e.state()
		if !slices.Equal(trig, []string{"harbor", "operatorhub"}) || polls != 1 {
			t.Fatalf("triggers %v polls %d", trig, polls)
		}
	})
	t.Run("batch with a malformed event", func(t *testing.T) {
		h, e := newHandler(t, Config{}, catalogs)
		bad := add.Clone()
		bad.SetID("a2")
		_ = bad.SetData(event.ApplicationJSON, map[string]string{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog"})
		r, err := cehttp.NewHTTPRequestFromEvents(ctx, "http://sink.example.test/events", []event.Event{bad, ping})
		if err != nil {
			t.Fatal(err)
		}
		// The good events are handled; the answer says not to redeliver.
		if w := serve(h, r); w.Code != 400 || !strings.Contains(w.Body.String(), "a2") {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if _, polls := e.state(); polls != 1 {
			t.Fatalf("polls %d", polls)
		}
	})
}

func TestEventsHandshake(t *testing.T) {
	h, _ := newHandler(t, Config{}, catalogs)
	r := httptest.NewRequest(http.MethodOptions, "/events", nil)
	r.Header.Set("WebHook-Request-Origin", "eventgrid.example.test")
	w := serve(h, r)
	if w.Code != 200 || w.Header().Get("WebHook-Allowed-Origin") != "eventgrid.example.test" || w.Header().Get("WebHook-Allowed-Rate") != "*" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
}

func TestEventsNoPoller(t *testing.T) {
	e := &fakeEngine{}
	h, err := New(Config{Insecure: true}, catalogs, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(h, request(t, "knative-pingsource-ping")); w.Code != 202 {
		t.Fatalf("status %d", w.Code)
	}
	if _, err := New(Config{}, nil, e, e); err == nil {
		t.Fatal("no lister accepted")
	}
}

// TestEventsIDsBounded: ids, sources and subjects longer than
// maxAttrBytes are refused before anything is recorded, and events of a
// type the endpoint ignores leave no id behind that could shadow a later
// event (the window is keyed by source and id).
func TestEventsIDsBounded(t *testing.T) {
	h, e := newHandler(t, Config{}, catalogs)
	long := strings.Repeat("i", 256<<10)
	for _, hdr := range []string{"Ce-Id", "Ce-Source", "Ce-Subject"} {
		r := request(t, "apiserver-resource-add")
		r.Header.Set(hdr, long)
		if w := serve(h, r); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "at most 1024") {
			t.Fatalf("%s of 256 KiB: %d %q", hdr, w.Code, w.Body.String())
		}
	}
	if h.seen.Len() != 0 {
		t.Fatalf("%d ids recorded for refused events", h.seen.Len())
	}
	// An event of an unknown type with the ping's source and id...
	r := request(t, "knative-pingsource-ping")
	r.Header.Set("Ce-Type", "com.example.unknown")
	if w := serve(h, r); w.Code != 202 {
		t.Fatalf("unknown type: %d", w.Code)
	}
	// ...does not make the ping itself a duplicate.
	serve(h, request(t, "knative-pingsource-ping"))
	if trig, polls := e.state(); len(trig) != 0 || polls != 1 || h.seen.Len() != 1 {
		t.Fatalf("triggers %v, polls %d, ids %d", trig, polls, h.seen.Len())
	}
}

// New refuses a missing lister and a missing triggerer each on its own.
func TestNewNeedsListerAndTriggerer(t *testing.T) {
	e := &fakeEngine{}
	if _, err := New(Config{Insecure: true}, catalogs, nil, e); !errors.Is(err, webhook.ErrConfig) {
		t.Fatalf("no triggerer: %v", err)
	}
	if _, err := New(Config{Insecure: true}, nil, e, e); !errors.Is(err, webhook.ErrConfig) {
		t.Fatalf("no lister: %v", err)
	}
}

// A too-large body counts as too_large, an unreadable one as invalid.
func TestEventsBodyOutcomes(t *testing.T) {
	got := map[string]int{}
	h, _ := newHandler(t, Config{}, catalogs, WithOutcome(func(_, o string) { got[o]++ }))
	r := request(t, "knative-pingsource-ping")
	setBody(strings.Repeat("x", webhook.DefaultMaxBodyBytes+1))(r)
	serve(h, r)
	if got[webhook.OutcomeTooLarge] != 1 || len(got) != 1 {
		t.Fatalf("oversized body: outcomes %v, want one too_large", got)
	}
	r = request(t, "knative-pingsource-ping")
	r.Body = errReader{}
	serve(h, r)
	if got[webhook.OutcomeInvalid] != 1 || len(got) != 2 {
		t.Fatalf("unreadable body: outcomes %v, want one invalid more", got)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func (errReader) Close() error { return nil }

// An id, source or subject of exactly maxAttrBytes is accepted.
func TestEventsAttrAtBound(t *testing.T) {
	h, e := newHandler(t, Config{}, catalogs)
	for _, hdr := range []string{"Ce-Id", "Ce-Source", "Ce-Subject"} {
		r := request(t, "apiserver-ref-add")
		r.Header.Set(hdr, strings.Repeat("a", maxAttrBytes))
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("%s of %d bytes: %d %s", hdr, maxAttrBytes, w.Code, w.Body)
		}
	}
	if trig, _ := e.state(); len(trig) != 3 {
		t.Fatalf("triggers %v, want 3", trig)
	}
}

// A ping exactly PingInterval after the last poll polls; one a nanosecond
// earlier does not.
func TestEventsPingIntervalBoundary(t *testing.T) {
	now := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	h, e := newHandler(t, Config{PingInterval: time.Minute}, catalogs, WithClock(func() time.Time { return now }))
	ping := func(id string) {
		r := request(t, "knative-pingsource-ping")
		r.Header.Set("Ce-Id", id)
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("ping %s: %d", id, w.Code)
		}
	}
	ping("1")
	now = now.Add(time.Minute - 1)
	ping("2")
	if _, polls := e.state(); polls != 1 {
		t.Fatalf("%d polls, want 1 within the interval", polls)
	}
	now = now.Add(1)
	ping("3")
	if _, polls := e.state(); polls != 2 {
		t.Fatalf("%d polls, want 2 at the interval", polls)
	}
}

// By default a second reference-mode update of one catalog within 30 s
// is ignored (and heard again after: the window is not endless); an add
// does not start that window.
func TestEventsRefUpdateDefaultWindow(t *testing.T) {
	h, e := newHandler(t, Config{}, catalogs)
	if h.cfg.RefUpdateInterval != 30*time.Second {
		t.Fatalf("default reference-update window %s, want 30s", h.cfg.RefUpdateInterval)
	}
	for i, typ := range []string{APIServerRefAdd, APIServerRefUpdate, APIServerRefUpdate} {
		r := request(t, "apiserver-ref-update")
		r.Header.Set("Ce-Type", typ)
		r.Header.Set("Ce-Id", fmt.Sprint("ref-", i))
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("%s: %d", typ, w.Code)
		}
	}
	if trig, _ := e.state(); !slices.Equal(trig, []string{"operatorhub", "operatorhub"}) {
		t.Fatalf("triggers %v, want the add and the first update", trig)
	}
}

// Resource-mode updates: only the Progressing condition's
// observedGeneration says the spec was seen; an object without a
// generation, and an add, always trigger.
func TestEventsResourceGeneration(t *testing.T) {
	obj := func(gen int, conds string) string {
		return fmt.Sprintf(`{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterCatalog","metadata":{"name":"operatorhub","generation":%d},"status":{"conditions":[%s]}}`, gen, conds)
	}
	for _, tc := range []struct {
		name, typ, body string
		trig            bool
	}{
		{"other condition saw it", APIServerResourceUpdate, obj(3, `{"type":"Serving","observedGeneration":3},{"type":"Progressing","observedGeneration":2}`), true},
		{"progressing saw it", APIServerResourceUpdate, obj(3, `{"type":"Progressing","observedGeneration":3}`), false},
		{"no generation", APIServerResourceUpdate, obj(0, `{"type":"Progressing","observedGeneration":0}`), true},
		{"add of an observed generation", APIServerResourceAdd, obj(3, `{"type":"Progressing","observedGeneration":3}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, e := newHandler(t, Config{}, catalogs)
			r := request(t, "apiserver-resource-update-spec")
			r.Header.Set("Ce-Type", tc.typ)
			setBody(tc.body)(r)
			if w := serve(h, r); w.Code != 202 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if trig, _ := e.state(); (len(trig) == 1) != tc.trig {
				t.Fatalf("triggers %v, want triggered %v", trig, tc.trig)
			}
		})
	}
}

// Only ClusterCatalogs of the catalog API group are acted on: the right
// group with another kind, or the right kind in another group, is not.
func TestEventsOtherKinds(t *testing.T) {
	for _, av := range []string{`"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterExtension"`, `"apiVersion":"example.test/v1","kind":"ClusterCatalog"`} {
		h, e := newHandler(t, Config{}, catalogs)
		r := request(t, "apiserver-ref-add")
		setBody(`{` + av + `,"name":"operatorhub"}`)(r)
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("%s: %d", av, w.Code)
		}
		if trig, _ := e.state(); len(trig) != 0 {
			t.Fatalf("%s triggered %v", av, trig)
		}
	}
}

var _ http.Handler = (*Handler)(nil)

// enginePoller polls a real engine, as serve does.
type enginePoller struct{ e *engine.Engine }

func (p enginePoller) PollDue(ctx context.Context) { p.e.PollDue(ctx) }

// A flood of PingSource events costs the store what one poll costs: pings
// within PingInterval of the last poll are coalesced.
func TestEventsPingFloodCoalesced(t *testing.T) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	counting := storagetest.NewCounting(st)
	set := engine.StaticCatalogs{
		{Name: "a", Image: catalogspec.ParseImage("registry.example.test/a:v1"), PollInterval: time.Minute},
		{Name: "b", Image: catalogspec.ParseImage("registry.example.test/b:v1"), PollInterval: time.Minute},
		{Name: "c", Image: catalogspec.ParseImage("registry.example.test/c:v1"), PollInterval: time.Minute},
	}
	// The syncs a poll queues settle for an hour, so they never run and
	// the store sees only the poll's own reads.
	eng := engine.New(nil, set, counting, engine.WithSettle(time.Hour, time.Hour))
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h, err := New(Config{Insecure: true}, lister{}, &fakeEngine{}, enginePoller{eng}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ops := func() int {
		stats, gets, _ := counting.Snapshot()
		n := 0
		for _, v := range stats {
			n += v
		}
		for _, v := range gets {
			n += v
		}
		return n
	}
	ping := func(i int) {
		r := request(t, "knative-pingsource-ping")
		r.Header.Set("Ce-Id", "ping-"+strconv.Itoa(i))
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("ping %d: %d", i, w.Code)
		}
	}
	ping(0)
	one := ops()
	if one == 0 {
		t.Fatal("a poll read nothing from the store")
	}
	for i := 1; i <= 200; i++ {
		ping(i)
	}
	if got := ops(); got != one {
		t.Fatalf("200 more pings within the interval made %d store operations, one poll makes %d", got-one, one)
	}
	mu.Lock()
	now = now.Add(31 * time.Second)
	mu.Unlock()
	ping(201)
	if got := ops(); got != 2*one {
		t.Fatalf("a ping after the interval: %d store operations, want %d", got, 2*one)
	}
}

// Events that change nothing say why at info level, at most once per
// interval per reason, and every outcome is counted.
func TestEventsOutcomesAndNotices(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	outcomes := map[string]int{}
	h, _ := newHandler(t, Config{}, lister{{Name: "x", Image: catalogspec.ParseImage("registry.example.test/x:v1")}}, WithLogger(log),
		WithOutcome(func(source, outcome string) {
			if source != Source {
				t.Errorf("source %q", source)
			}
			outcomes[outcome]++
		}))
	for i := range 3 {
		r := request(t, "harbor-cloudevents-push") // names no configured catalog
		setBody(strings.Replace(readBody(t, r), "4b2f89a6", "push-"+strconv.Itoa(i), 1))(r)
		serve(h, r)
	}
	// A redelivered push is a duplicate...
	r := request(t, "harbor-cloudevents-push")
	setBody(strings.Replace(readBody(t, r), "4b2f89a6", "push-0", 1))(r)
	serve(h, r)
	// ...an event of a type never acted on is ignored each time (its id is
	// not recorded).
	serve(h, request(t, "harbor-cloudevents-deleted"))
	serve(h, request(t, "harbor-cloudevents-deleted"))
	if n := strings.Count(buf.String(), `msg="cloudevent matched no catalog"`); n != 1 {
		t.Errorf("%d info lines for unmatched events, want 1:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), `msg="cloudevent ignored"`); n != 1 {
		t.Errorf("%d info lines for ignored events, want 1:\n%s", n, buf.String())
	}
	want := map[string]int{webhook.OutcomeUnmatched: 3, webhook.OutcomeIgnored: 2, webhook.OutcomeDuplicate: 1}
	for k, v := range want {
		if outcomes[k] != v {
			t.Errorf("outcome %s counted %d times, want %d (all: %v)", k, outcomes[k], v, outcomes)
		}
	}
}

func readBody(t *testing.T, r *http.Request) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
