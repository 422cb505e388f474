package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/sync/follow"
)

// An agent without a usable --base-url is a usage mistake, named before
// the store or a cluster is looked for (neither is here).
func TestAgentNeedsBaseURL(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{
		{"agent", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--kubeconfig", ""},
		{"agent", "--base-url", "bucket.example.com", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--kubeconfig", ""},
	} {
		code, out, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "agent needs --base-url") || strings.Contains(stderr, "kubeconfig") {
			t.Errorf("%v: exit %d, want 2 naming --base-url:\n%s%s", args, code, out, stderr)
		}
	}
}

// /events takes notifications only with a token (or --notify-open): by
// default it is not there at all, and with a token it refuses requests
// without it.
func TestAgentNotificationsNeedToken(t *testing.T) {
	var c agentCmd
	f := follow.New(nil, nil, nil)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusNotFound}, {"s3cret", http.StatusUnauthorized}} {
		h, err := c.handler(nil, f, metrics.New(), slog.New(slog.DiscardHandler), tc.token)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(`{"Records":[]}`)))
		if w.Code != tc.want {
			t.Errorf("token %q: POST /events %d, want %d", tc.token, w.Code, tc.want)
		}
	}
}
