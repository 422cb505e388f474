package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestStorm(t *testing.T) {
	var got, bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(body) != `{"tag":"v1"}` || r.Header.Get("X-Signature-256") != "sig" {
			bad.Add(1)
		}
		if got.Add(1)%10 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	var atHalf int64 = -1
	s := Storm{
		URL: srv.URL, Body: []byte(`{"tag":"v1"}`), Header: http.Header{"X-Signature-256": {"sig"}},
		N: 100, Senders: 4, Over: 200 * time.Millisecond, Timeout: 5 * time.Second,
		At: map[int]func(){50: func() { atHalf = got.Load() }},
	}
	res := s.Run(context.Background())
	if got.Load() != 100 || bad.Load() != 0 {
		t.Fatalf("%d requests arrived, %d not as sent; want 100, 0", got.Load(), bad.Load())
	}
	if len(res.Acks) != 100 || !slices.IsSorted(res.Acks) {
		t.Errorf("%d acks (sorted: %v), want 100 sorted", len(res.Acks), slices.IsSorted(res.Acks))
	}
	if len(res.Failures) != 10 || !strings.HasPrefix(res.Failures[0], "status 503") {
		t.Errorf("failures %q, want 10 of status 503", res.Failures)
	}
	if atHalf < 0 || atHalf > 50 {
		t.Errorf("At[50] ran after %d requests arrived, want at most 50", atHalf)
	}
	if least := 99 * s.Over / 100; res.Took < least {
		t.Errorf("took %v, want at least %v (paced over %v)", res.Took, least, s.Over)
	}
}

func TestStormCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	res := Storm{URL: srv.URL, N: 1000, Senders: 2, Over: 10 * time.Second, At: map[int]func(){3: cancel}}.Run(ctx)
	if len(res.Acks) > 3 {
		t.Fatalf("%d requests after the cancel at the fourth, want at most 3", len(res.Acks))
	}
}
