package s3

import (
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/test/servers"
)

// A pointer (or a lease) is read with one GetObject, which answers with
// the ETag of the version it sends, not a HeadObject and then a GetObject:
// against a far S3 every request is a round trip. Timed by the metrics
// wrapper (serve's store) too.
func TestControlReadIsOneRequest(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint = proxy.URL
	s := newTestStore(t, cfg)
	ctx := testCtx(t)
	digest := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	w, err := catalog.NewWriter(ctx, s, "c", digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("olm.package", "p", "p", []byte(`{"schema":"olm.package","name":"p"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, catalog.Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(ctx, s, "c", catalog.Pointer{Digest: digest, ResolvedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []storage.Store{s, metrics.New().Store(s)} {
		proxy.ResetCounts()
		p, etag, err := catalog.Current(ctx, st, "c")
		if err != nil || p.Digest != digest {
			t.Fatalf("Current = %+v, %v", p, err)
		}
		if in, err := s.Stat(ctx, catalog.PointerKey("c")); err != nil || in.ETag != etag {
			t.Fatalf("ETag %q, Stat %+v %v", etag, in, err)
		}
		if reqs := proxy.Requests(); len(reqs) != 2 || reqs[0].Method != "GET" {
			t.Fatalf("%T: Current and a Stat made %+v; want one GET, then the Stat's HEAD", st, reqs)
		}
	}
}
