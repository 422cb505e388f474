package events

// Tests written for the mutants gremlins found alive (docs/testing.md):
// each names the bug it stands for.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// fakeReviewer accepts one token; any other gets its error.
type fakeReviewer struct {
	mu    sync.Mutex
	good  string
	err   error
	calls []string
}

func (f *fakeReviewer) Review(_ context.Context, token string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, token)
	if token == f.good {
		return "system:serviceaccount:knative-eventing:broker", nil
	}
	return "", f.err
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

// An audience needs a reviewer; with one, neither token nor insecure is
// needed. A token alone is enough too.
func TestAuthConfig(t *testing.T) {
	rv := &fakeReviewer{}
	for _, tc := range []struct {
		cfg  Config
		tr   TokenReviewer
		want bool
	}{
		{Config{Audience: "catalogsync"}, nil, false},
		{Config{Audience: "catalogsync", Insecure: true}, nil, false},
		{Config{Audience: "catalogsync"}, rv, true},
		{Config{Token: "t"}, nil, true},
		{Config{Token: "t", Audience: "catalogsync"}, rv, true},
		{Config{}, rv, false},
		{Config{Insecure: true}, nil, true},
	} {
		err := checkAuthConfig(tc.cfg, tc.tr)
		if (err == nil) != tc.want {
			t.Errorf("%+v with reviewer %v: %v, want accepted %v", tc.cfg, tc.tr != nil, err, tc.want)
		}
	}
}

// With an audience, a bearer token the reviewer accepts is in; no token,
// another scheme, a blank one or a refused one is out, and a reviewer that
// cannot tell makes it 503. With a static token as well, either works.
func TestEventsAudience(t *testing.T) {
	for _, token := range []string{"", "broker-token"} {
		t.Run("token="+token, func(t *testing.T) {
			rv := &fakeReviewer{good: "oidc-token", err: fmt.Errorf("%w: not for this audience", webhook.ErrForbidden)}
			h, e := newHandler(t, Config{Audience: "catalogsync", Token: token}, catalogs, WithTokenReviewer(rv))
			for _, tc := range []struct {
				auth string
				want int
			}{
				{"", 401},
				{"Basic b2lkYy10b2tlbg==", 401},
				{"Bearer ", 401},
				{"Bearer other", 403},
				{"Bearer oidc-token", 202},
				{"bearer  oidc-token ", 202},
			} {
				r := request(t, "knative-pingsource-ping")
				r.Header.Set("Ce-Id", "id-"+tc.auth)
				if tc.auth != "" {
					r.Header.Set("Authorization", tc.auth)
				}
				want := tc.want
				if token != "" && tc.auth != "" && want == 401 {
					want = 403 // the static token's verdict: wrong credentials
				}
				if w := serve(h, r); w.Code != want {
					t.Errorf("Authorization %q: %d, want %d", tc.auth, w.Code, want)
				}
			}
			if token != "" {
				r := request(t, "knative-pingsource-ping")
				r.Header.Set("Ce-Id", "static")
				r.Header.Set("Authorization", "Bearer "+token)
				if w := serve(h, r); w.Code != 202 {
					t.Errorf("static token beside an audience: %d", w.Code)
				}
			}
			if _, polls := e.state(); polls == 0 {
				t.Error("no authenticated ping polled")
			}
			rv.err = errors.New("apiserver unavailable")
			r := request(t, "knative-pingsource-ping")
			r.Header.Set("Ce-Id", "unavailable")
			r.Header.Set("Authorization", "Bearer third")
			if w := serve(h, r); w.Code != 503 || w.Header().Get("Retry-After") == "" {
				t.Errorf("reviewer unavailable: %d %v", w.Code, w.Header())
			}
		})
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
func (errReader) Close() error             { return nil }

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
