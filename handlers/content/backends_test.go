package content

import (
	"context"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/servers"
)

// backend is a real storage backend the handler tests run against.
type backend struct {
	name string
	// open creates a new, empty store and returns a function that opens
	// a handle on it; each call returns another independent handle on the
	// same data, as another replica would have. Handles are closed when
	// the test ends. A backend that needs a server it cannot reach calls
	// t.Skip.
	open func(t testing.TB) (handle func() storage.Store)
}

// backends lists every backend the tests run against; append a backend
// (s3 on MinIO, say) here and every handler test and benchmark runs on it
// too.
var backends = []backend{
	{name: "fs", open: openFS},
	{name: "s3", open: openS3},
}

// openS3 makes a fresh bucket on the test binary's MinIO; every handle is
// another client on it, as another replica would have.
func openS3(t testing.TB) func() storage.Store {
	m := servers.SharedMinIO(t)
	bucket := m.NewBucket(t)
	return func() storage.Store {
		s, err := s3.New(context.Background(), s3.Config{
			Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
			AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func openFS(t testing.TB) func() storage.Store {
	dir := t.TempDir()
	return func() storage.Store {
		s, err := fs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// forEachBackend runs f as a subtest per backend, with a fresh store.
func forEachBackend(t *testing.T, f func(t *testing.T, s storage.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.open(t)()) })
	}
}

// forEachBackendReplicas runs f per backend with a handle opener, for
// tests where several replicas share one store.
func forEachBackendReplicas(t *testing.T, f func(t *testing.T, handle func() storage.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.open(t)) })
	}
}
