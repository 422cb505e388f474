package ui

import (
	"context"
	"github.com/catalogsync/catalogsync/test/servers"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/syncdir"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "../..")
}

// sharedDir is the workplace's shared data (servers.SharedDir); "" when
// absent, and the test that needs it skips.
func sharedDir(testing.TB) string { return servers.SharedDir() }

func newStore(t testing.TB) storage.Store {
	t.Helper()
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// syncDir publishes the FBC folder dir as catalog name through the real
// pipeline.
func syncDir(t testing.TB, store storage.Store, name, dir string) pipeline.Result {
	return syncdir.Publish(t, store, name, dir)
}

// server serves the pages and the REST API over store, as serve mounts
// them, with an engine over set.
type server struct {
	*httptest.Server
	engine *engine.Engine
}

func startServer(t testing.TB, store storage.Store, set engine.StaticCatalogs, pl *pipeline.Pipeline, opts ...engine.Option) *server {
	t.Helper()
	if pl == nil {
		src, err := source.New(source.WithDockerConfig(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		pl = pipeline.New(src, store, pipeline.WithVerifyReuse(true))
	}
	// Nothing syncs unless a test triggers it.
	eng := engine.New(pl, set, store, append([]engine.Option{engine.WithSettle(0, 0)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	eng.Start(ctx)
	t.Cleanup(func() { cancel(); eng.Wait() })
	r := chi.NewRouter()
	api.New(eng, set, store, api.WithLogger(quietLogger())).Mount(r)
	New(store, set, WithLogger(quietLogger())).Mount(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &server{Server: srv, engine: eng}
}

func get(t testing.TB, url string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
