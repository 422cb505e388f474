package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/health"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// brokenStore fails every Stat with an error naming a secret path, or
// hangs until the request's deadline.
type brokenStore struct {
	storage.Store
	hang bool
}

func (b brokenStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	if b.hang {
		<-ctx.Done()
		return storage.Info{}, ctx.Err()
	}
	return storage.Info{}, errors.New("dial tcp: secret-bucket.internal: refused")
}

func get(t *testing.T, h *health.Handler, path string) (int, http.Header, string) {
	t.Helper()
	r := chi.NewRouter()
	h.Mount(r)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, rec.Header(), string(b)
}

func TestReadyWhileTheStoreAnswers(t *testing.T) {
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := health.New(s)
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _, body := get(t, h, p); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("%s: %d %q", p, code, body)
		}
	}
}

func TestNotReadyWithoutTheStoreAndNoSecretServed(t *testing.T) {
	for name, c := range map[string]struct {
		store storage.Store
		want  string
	}{
		"failing": {brokenStore{}, "the object store failed"},
		"hanging": {brokenStore{hang: true}, "did not answer within 10ms"},
	} {
		t.Run(name, func(t *testing.T) {
			h := health.New(c.store, health.WithTimeout(10*time.Millisecond))
			code, hdr, body := get(t, h, "/readyz")
			if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, c.want) {
				t.Fatalf("readyz: %d %v %q", code, hdr, body)
			}
			if strings.Contains(body, "secret") {
				t.Fatalf("the store's error was served: %q", body)
			}
			if code, _, _ := get(t, h, "/healthz"); code != http.StatusOK {
				t.Fatalf("healthz %d: a store outage must not restart the process", code)
			}
		})
	}
}

func TestNotReadyWhileAnExtraCheckFails(t *testing.T) {
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := health.New(s, health.WithCheck(func() error { return errors.New("informer not synced") }))
	if code, _, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "informer not synced") {
		t.Fatalf("readyz: %d %q", code, body)
	}
}
