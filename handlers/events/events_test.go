package events

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
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

type lister []webhook.Catalog

func (l lister) Catalogs() []webhook.Catalog { return l }

// openLister also accepts catalogs it does not list, as a cluster-backed
// lister whose cache lags would.
type openLister struct{ lister }

func (openLister) AcceptsUnlisted() bool { return true }

var catalogs = lister{
	{Name: "operatorhub", Image: "registry.example.test/acme/operator-catalog:v4.16"},
	{Name: "harbor", Image: "harbor.example.com/acme/operator-catalog:v4.16"},
	{Name: "acr", Image: "acmecatalogs.acr.example.test/acme/operator-catalog:v4.16"},
	{Name: "unrelated", Image: "registry.example.test/acme/other:v1"},
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
		{name: "unknown catalog", fixture: "apiserver-resource-add", lister: lister{{Name: "x", Image: "registry.example.test/x:v1"}}, want: 202},
		{name: "unknown catalog, open lister", fixture: "apiserver-resource-add", lister: openLister{lister{{Name: "x", Image: "registry.example.test/x:v1"}}}, want: 202, trig: []string{"operatorhub"}},
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

func TestEventsToken(t *testing.T) {
	h, e := newHandler(t, Config{Token: "broker-token"}, catalogs)
	r := request(t, "knative-pingsource-ping")
	if w := serve(h, r); w.Code != 401 {
		t.Fatalf("no token: %d", w.Code)
	}
	r = request(t, "knative-pingsource-ping")
	r.Header.Set("Authorization", "Bearer guess")
	if w := serve(h, r); w.Code != 403 {
		t.Fatalf("wrong token: %d", w.Code)
	}
	if _, polls := e.state(); polls != 0 {
		t.Fatal("unauthenticated event acted on")
	}
	r = request(t, "knative-pingsource-ping")
	r.Header.Set("Authorization", "Bearer broker-token")
	if w := serve(h, r); w.Code != 202 {
		t.Fatalf("token: %d", w.Code)
	}
	if _, polls := e.state(); polls != 1 {
		t.Fatal("authenticated ping not acted on")
	}
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
