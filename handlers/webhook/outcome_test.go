package webhook

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
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
