package webhook

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/logbuf"
)

// Every notification that reaches a receiver is reported once, with the
// receiver's type and what became of it.
func TestOutcomes(t *testing.T) {
	var got []string
	rc, _ := newTestReceiver(t, WithOutcome(func(source, outcome string) { got = append(got, source+" "+outcome) }))
	post := func(body, sig string) int {
		req := httptest.NewRequest(http.MethodPost, "/hooks/ci", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sig != "" {
			req.Header.Set("X-Signature-256", sig)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		return w.Code
	}
	match := `{"repository":"acme/operator-catalog","tag":"v4.16"}`
	nomatch := `{"repository":"acme/unknown","tag":"v1"}`
	bad := `{"repository":`
	big := `{"repository":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}`
	codes := []int{
		post(match, Sign("hook-test-secret", []byte(match))),
		post(nomatch, Sign("hook-test-secret", []byte(nomatch))),
		post(match, Sign("wrong", []byte(match))),
		post(match, ""),
		post(bad, Sign("hook-test-secret", []byte(bad))),
		post(big, Sign("hook-test-secret", []byte(big))),
	}
	want := []string{"generic triggered", "generic unmatched", "generic forbidden", "generic unauthorized", "generic invalid", "generic too_large"}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes %v (codes %v), want %v", got, codes, want)
	}
}

// A notification that changes nothing says why at info level, once per
// interval per receiver and reason; the rest go to debug.
func TestNothingHappenedIsLogged(t *testing.T) {
	var buf logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rc, _ := newTestReceiver(t, WithLogger(log))
	post := func(body string) {
		req := httptest.NewRequest(http.MethodPost, "/hooks/ci", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Signature-256", Sign("hook-test-secret", []byte(body)))
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != http.StatusAccepted {
			t.Fatalf("status %d", w.Code)
		}
	}
	for range 5 {
		post(`{"repository":"acme/unknown","tag":"v1"}`)
	}
	out := buf.String()
	if n := strings.Count(out, `level=INFO msg="webhook matched no catalog" receiver=ci`); n != 1 {
		t.Fatalf("%d info lines for 5 unmatched notifications, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "acme/unknown") {
		t.Fatalf("the line does not name the push:\n%s", out)
	}
}
