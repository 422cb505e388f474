package events

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
)

// FuzzEvents sends arbitrary bodies with an arbitrary content type and
// CloudEvent type (binary-mode headers are present, so a structured or
// batched content type switches mode). Seeds are in testdata/fuzz,
// written from testdata/webhooks. The handler must never panic and never
// answer 5xx: Knative would redeliver what can never succeed.
func FuzzEvents(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType, ceType string, body []byte) {
		h, e := newHandler(t, Config{}, openLister{catalogs})
		r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Ce-Specversion", "1.0")
		r.Header.Set("Ce-Id", "fuzz-1")
		r.Header.Set("Ce-Source", "/fuzz")
		r.Header.Set("Ce-Type", ceType)
		w := serve(h, r)
		switch w.Code {
		case 202, 400, 413, 415:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		trig, polls := e.state()
		if w.Code != 202 && w.Code != 400 && (len(trig) > 0 || polls > 0) {
			t.Fatalf("status %d but acted: %v %d", w.Code, trig, polls)
		}
		for _, c := range trig {
			if !knownOrValid(c) {
				t.Fatalf("triggered %q", c)
			}
		}
	})
}

// knownOrValid: with an open lister any valid name may be triggered.
func knownOrValid(name string) bool {
	return catalog.ValidName(name)
}
