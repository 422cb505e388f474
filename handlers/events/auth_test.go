package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

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

// Without a token, an audience or insecure: true, /events is not served.
func TestEventsRefuseUnauthenticatedByDefault(t *testing.T) {
	e := &fakeEngine{}
	if _, err := New(Config{}, catalogs, e, e); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Fatalf("no credentials configured: %v", err)
	}
	if _, err := New(Config{Audience: "catalogsync"}, catalogs, e, e); err == nil {
		t.Fatal("an audience without a token reviewer was accepted")
	}
	if _, err := New(Config{Insecure: true}, catalogs, e, e); err != nil {
		t.Fatalf("insecure: %v", err)
	}
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
