package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// engine stands in for the sync engine: it records triggers.
type engine struct {
	mu    sync.Mutex
	calls []string // "catalog reason"
}

func (e *engine) Trigger(_ context.Context, catalog, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, catalog+" "+reason)
}

func (e *engine) snapshot() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// lister lets the test add catalogs once the registry's port is known.
type lister struct {
	mu   sync.Mutex
	cats []catalogspec.Catalog
}

func (l *lister) Catalogs() []catalogspec.Catalog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cats
}

// delivery is one notification the registry delivered, as the receiver
// answered it.
type delivery struct {
	actions []string // "push application/vnd.oci.image.manifest.v1+json"
	status  int
}

// tap records what the registry sends before the receiver handles it.
type tap struct {
	mu   sync.Mutex
	next http.Handler
	got  []delivery
}

func (t *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var env struct {
		Events []struct {
			Action string `json:"action"`
			Target struct {
				MediaType string `json:"mediaType"`
			} `json:"target"`
		} `json:"events"`
	}
	_ = json.Unmarshal(body, &env)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	rw := httptest.NewRecorder()
	t.next.ServeHTTP(rw, r)
	for k, v := range rw.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.Code)
	w.Write(rw.Body.Bytes())
	d := delivery{status: rw.Code}
	for _, e := range env.Events {
		d.actions = append(d.actions, e.Action+" "+e.Target.MediaType)
	}
	t.mu.Lock()
	t.got = append(t.got, d)
	t.mu.Unlock()
}

func (t *tap) deliveries() []delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]delivery(nil), t.got...)
}

// waitFor polls cond until it holds or the deadline passes: the registry
// delivers from a queue, asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countFor(calls []string, catalog string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, catalog+" ") {
			n++
		}
	}
	return n
}

// TestDistributionNotificationsEndToEnd runs a real CNCF Distribution
// registry that notifies a Receiver: pushes trigger the catalog of the
// pushed repository, pulls trigger nothing.
func TestDistributionNotificationsEndToEnd(t *testing.T) {
	ctx := context.Background()
	const secret = "e2e-notification-secret"
	eng := &engine{}
	cats := &lister{}
	rc, err := webhook.NewReceiver(webhook.Config{
		Receivers: []webhook.ReceiverConfig{{Name: "registry", Type: webhook.TypeDistribution, Secret: secret}},
	}, cats, eng)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{next: rc}
	srv := httptest.NewServer(tp)
	t.Cleanup(srv.Close)

	reg := servers.StartRegistry(t, servers.WithNotifications(srv.URL+"/hooks/registry", map[string]string{"Authorization": "Bearer " + secret}))
	cats.mu.Lock()
	cats.cats = []catalogspec.Catalog{
		{Name: "tiny", Image: catalogspec.ParseImage(reg.Host + "/catalogs/tiny:v1")},
		{Name: "tiny-v2", Image: catalogspec.ParseImage(reg.Host + "/catalogs/tiny:v2")},
		{Name: "other", Image: catalogspec.ParseImage(reg.Host + "/catalogs/other:v1")},
		{Name: "elsewhere", Image: catalogspec.ParseImage("registry.example.test/catalogs/tiny:v1")},
	}
	cats.mu.Unlock()

	rc2 := imagebuild.NewRegClient(reg.Host)
	img := imagebuild.FromDir("../../testdata/fbc/tiny/configs", "/configs")
	first, err := imagebuild.Push(ctx, rc2, reg.Host+"/catalogs/tiny:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a trigger for the first push", func() bool { return countFor(eng.snapshot(), "tiny") >= 1 })
	if c := eng.snapshot()[0]; !strings.Contains(c, first) {
		t.Fatalf("trigger %q does not name the pushed digest %s", c, first)
	}

	// New content on the same tag.
	img.Labels["org.opencontainers.image.revision"] = "2"
	second, err := imagebuild.Push(ctx, rc2, reg.Host+"/catalogs/tiny:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("the second push has the same digest")
	}
	waitFor(t, "a trigger for the second push", func() bool { return countFor(eng.snapshot(), "tiny") >= 2 })
	if c := eng.snapshot()[1]; !strings.Contains(c, second) {
		t.Fatalf("trigger %q does not name the pushed digest %s", c, second)
	}

	// Pull traffic: HEAD and GET of the manifest and a blob.
	r, err := ref.New(reg.Host + "/catalogs/tiny:v1")
	if err != nil {
		t.Fatal(err)
	}
	before := len(tp.deliveries())
	if _, err := rc2.ManifestHead(ctx, r); err != nil {
		t.Fatal(err)
	}
	m, err := rc2.ManifestGet(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := m.(manifest.Imager).GetLayers()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := rc2.BlobGet(ctx, r, descriptor.Descriptor{Digest: layers[0].Digest, Size: layers[0].Size, MediaType: layers[0].MediaType})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, blob)
	blob.Close()
	// The queue is in order: once the pulls of the GET are delivered,
	// everything before them is too.
	waitFor(t, "pull notifications", func() bool {
		pulls := 0
		for _, d := range tp.deliveries()[before:] {
			for _, a := range d.actions {
				if strings.HasPrefix(a, "pull ") {
					pulls++
				}
			}
		}
		return pulls >= 3
	})

	calls := eng.snapshot()
	if n := countFor(calls, "tiny"); n != 2 {
		t.Fatalf("tiny triggered %d times, want one per push: %q", n, calls)
	}
	// A digest-only manifest push would also trigger v2; tag pushes do not.
	for _, name := range []string{"tiny-v2", "other", "elsewhere"} {
		if n := countFor(calls, name); n != 0 {
			t.Fatalf("%s triggered: %q", name, calls)
		}
	}
	for _, d := range tp.deliveries() {
		t.Logf("delivery %d %v", d.status, d.actions)
	}
	t.Logf("triggers %q", calls)
	var blobPushes, manifestPushes int
	for _, d := range tp.deliveries() {
		if d.status != http.StatusAccepted {
			t.Fatalf("receiver answered %d to %v", d.status, d.actions)
		}
		for _, a := range d.actions {
			switch {
			case a == "push application/octet-stream":
				blobPushes++
			case strings.HasPrefix(a, "push "):
				manifestPushes++
			}
		}
	}
	if blobPushes == 0 || manifestPushes != 2 {
		t.Fatalf("registry sent %d blob and %d manifest pushes; the test relies on both kinds", blobPushes, manifestPushes)
	}

	// A multi-platform image: the platform manifests are pushed by digest
	// (no tag), which may change any tag of the repository, then the index
	// by tag.
	img.Platforms = []string{"linux/amd64", "linux/arm64"}
	index, err := imagebuild.Push(ctx, rc2, reg.Host+"/catalogs/tiny:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a trigger for the index", func() bool {
		for _, c := range eng.snapshot() {
			if strings.HasPrefix(c, "tiny ") && strings.Contains(c, ":v1@"+index) {
				return true
			}
		}
		return false
	})
	calls = eng.snapshot()
	if n := countFor(calls, "tiny-v2"); n == 0 {
		t.Fatalf("digest-only pushes did not trigger the repository's other tag: %q", calls)
	}
	for _, c := range calls {
		if strings.HasPrefix(c, "tiny-v2 ") && strings.Contains(c, ":v1") {
			t.Fatalf("a v1 tag push triggered the v2 catalog: %q", c)
		}
	}
	if n := countFor(calls, "other") + countFor(calls, "elsewhere"); n != 0 {
		t.Fatalf("other repositories triggered: %q", calls)
	}
}
