package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// TestLogRequests checks the request log's fields, installed on a chi
// router with Use and wrapped around a handler from outside: both log the
// route pattern, not the path.
func TestLogRequests(t *testing.T) {
	store := newFSStore(t)
	set := engine.StaticCatalogs{{Name: tinyName, Image: catalogspec.ParseImage("registry.example.test/tiny/catalog:v1")}}
	h := api.New(engine.New(nil, set, store), set, store)

	var buf logbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	inside := chi.NewRouter()
	inside.Use(metrics.Observe(httpserver.RequestLog(log)))
	h.Mount(inside)
	outside := metrics.Observe(httpserver.RequestLog(log))(h)

	for name, handler := range map[string]http.Handler{"Use": inside, "wrapped": outside} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			for _, c := range []struct {
				path, route string
				status      int
				level       string
			}{
				{"/api/v1/catalogs/tiny", "/api/v1/catalogs/{name}", 200, "INFO"},
				{"/api/v1/catalogs/nope", "/api/v1/catalogs/{name}", 404, "INFO"},
				{"/healthz", "/healthz", 200, "DEBUG"},
				{"/api/v1/operations/x", "/api/v1/operations/{id}", 404, "INFO"},
			} {
				resp, err := http.Get(srv.URL + c.path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lines := buf.TakeJSON(t)
				if len(lines) != 1 {
					t.Fatalf("%s: %d log lines: %v", c.path, len(lines), lines)
				}
				l := lines[0]
				if l["msg"] != "http request" || l["method"] != "GET" || l["route"] != c.route || l["path"] != c.path ||
					l["status"] != float64(c.status) || l["bytes"] != float64(len(body)) || l["level"] != c.level {
					t.Fatalf("%s: logged %v", c.path, l)
				}
				if d, ok := l["duration"].(float64); !ok || d <= 0 {
					t.Fatalf("%s: duration %v", c.path, l["duration"])
				}
			}
		})
	}
}
