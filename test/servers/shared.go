package servers

import (
	"sync"
	"testing"
)

var shared struct {
	once  sync.Once
	minio *MinIO

	kubeOnce sync.Once
	kube     *KubeAPIServer

	kubesMu sync.Mutex
	kubes   []*KubeAPIServer // SharedKubes' beyond the first
}

// SharedMinIO returns one MinIO for the whole test binary, started by the
// first caller: packages whose many tests each need a fresh bucket, not a
// fresh server. It stops when the test binary exits. Tests that stop or
// restart MinIO must start their own with StartMinIO.
func SharedMinIO(t testing.TB) *MinIO {
	t.Helper()
	skipShort(t, "minio")
	shared.once.Do(func() { shared.minio = StartMinIO(processLifetime{t}) })
	if shared.minio == nil {
		t.Fatal("shared MinIO failed to start (see the first test that asked for it)")
	}
	return shared.minio
}

// SharedKube returns one etcd + kube-apiserver for the whole test binary,
// started by the first caller. Tests sharing it must clean up the objects
// they create. Tests that stop or restart the apiserver start their own.
func SharedKube(t testing.TB) *KubeAPIServer {
	t.Helper()
	skipShort(t, "kube-apiserver")
	shared.kubeOnce.Do(func() { shared.kube = StartKube(processLifetime{t}) })
	if shared.kube == nil {
		t.Fatal("shared kube-apiserver failed to start (see the first test that asked for it)")
	}
	return shared.kube
}

// SharedKubes returns n clusters (etcd + kube-apiserver) for the whole
// test binary, the first SharedKube's, the others started when first
// asked for: packages whose tests each need several clusters, not fresh
// ones. Tests sharing them must clean up the objects they create.
func SharedKubes(t testing.TB, n int) []*KubeAPIServer {
	t.Helper()
	if n <= 0 {
		return nil
	}
	out := []*KubeAPIServer{SharedKube(t)}
	shared.kubesMu.Lock()
	defer shared.kubesMu.Unlock()
	for len(shared.kubes) < n-1 {
		shared.kubes = append(shared.kubes, StartKube(processLifetime{t}))
	}
	return append(out, shared.kubes[:n-1]...)
}

// processLifetime lets a server outlive the test that starts it: no
// cleanup runs at that test's end and its files are not in that test's
// temp dir. The server dies with the test binary (Pdeathsig).
type processLifetime struct{ testing.TB }

func (processLifetime) Cleanup(func()) {}

func (p processLifetime) TempDir() string {
	d, err := ProcessTempDir("catalogsync-shared")
	if err != nil {
		p.Fatal(err)
	}
	return d
}
