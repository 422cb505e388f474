package servers

import (
	"os"
	"sync"
	"testing"
)

var shared struct {
	once  sync.Once
	minio *MinIO
}

// SharedMinIO returns one MinIO for the whole test binary, started by the
// first caller: packages whose many tests each need a fresh bucket, not a
// fresh server. It stops when the test binary exits. Tests that stop or
// restart MinIO must start their own with StartMinIO.
func SharedMinIO(t testing.TB) *MinIO {
	t.Helper()
	shared.once.Do(func() { shared.minio = StartMinIO(processLifetime{t}) })
	if shared.minio == nil {
		t.Fatal("shared MinIO failed to start (see the first test that asked for it)")
	}
	return shared.minio
}

// processLifetime lets a server outlive the test that starts it: no
// cleanup runs at that test's end and its files are not in that test's
// temp dir. The server dies with the test binary (Pdeathsig).
type processLifetime struct{ testing.TB }

func (processLifetime) Cleanup(func()) {}

func (p processLifetime) TempDir() string {
	d, err := os.MkdirTemp("", "catalogsync-shared-*")
	if err != nil {
		p.Fatal(err)
	}
	return d
}
