package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// TestOneWrapFeedsMetricsAndLog: with the metrics and the request log on
// one metrics.Observe, the handler gets its response writer wrapped once,
// and both read the status and size from that one wrapper.
func TestOneWrapFeedsMetricsAndLog(t *testing.T) {
	m := metrics.New()
	var buf logbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	r := chi.NewRouter()
	r.Use(metrics.Observe(m.ObserveHTTP, httpserver.RequestLog(log)))
	wraps := -1
	r.Get("/probe/{x}", func(w http.ResponseWriter, _ *http.Request) {
		wraps = 0
		for inner := w; ; wraps++ {
			u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				break
			}
			inner = u.Unwrap()
		}
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout")
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/probe/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if wraps != 1 {
		t.Fatalf("the response was wrapped %d times, want once", wraps)
	}
	lines := buf.TakeJSON(t)
	if len(lines) != 1 || lines[0]["status"] != float64(418) || lines[0]["bytes"] != float64(15) || lines[0]["route"] != "/probe/{x}" {
		t.Fatalf("logged %v", lines)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := `catalogsync_http_requests_total{code="418",method="GET",route="/probe/{x}"} 1`
	if !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("metrics lack %s", want)
	}
}
