package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// env is a real registry behind a counting proxy and a pipeline into a
// filesystem store: what the engine's integration tests run syncs on.
type env struct {
	t     *testing.T
	store storage.Store
	reg   *servers.Registry
	proxy *servers.Proxy
	pl    *pipeline.Pipeline
}

// newEnv starts a real registry behind a counting proxy and a pipeline
// that reads through the proxy into a fresh filesystem store.
func newEnv(t *testing.T, opts ...pipeline.Option) *env {
	t.Helper()
	e := &env{t: t}
	e.reg = servers.StartRegistry(t)
	e.proxy = servers.NewProxy(t, e.reg.URL)
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	e.pl = e.pipeline(opts...)
	return e
}

func (e *env) pipeline(opts ...pipeline.Option) *pipeline.Pipeline {
	src, err := source.New(source.WithHosts(source.Host{Name: e.proxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { src.Close() })
	return pipeline.New(src, e.store, append([]pipeline.Option{pipeline.WithTempDir(e.t.TempDir()), pipeline.WithVerifyReuse(true)}, opts...)...)
}

// push writes img to the registry directly (not through the proxy, so the
// proxy counts only what the pipeline does) and returns the proxy ref.
func (e *env) push(repoTag string, img imagebuild.Image) (ref, digest string) {
	e.t.Helper()
	d, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(e.reg.Host), e.reg.Host+"/"+repoTag, img)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.proxy.Host + "/" + repoTag, d
}
