package status

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
)

func TestServingMessageMirror(t *testing.T) {
	const d = "sha256:ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"
	p := catalog.Pointer{Digest: d, Ref: "registry.example.test/cat:v1"}
	if got := servingMessage(p); got != "Serving "+d+" from registry.example.test/cat:v1" {
		t.Errorf("without a mirror: %q", got)
	}
	p.Mirror = "mirror.example.test:5000/acme"
	if got := servingMessage(p); got != "Serving "+d+" from registry.example.test/cat:v1 via mirror mirror.example.test:5000/acme" {
		t.Errorf("with a mirror: %q", got)
	}
	// A location from a file is not bounded by the API: the message is.
	p.Mirror = "mirror.example.test/" + strings.Repeat("a\n", 5000)
	got := servingMessage(p)
	if len(got) > maxMessage || strings.Contains(got, "\n") || !strings.Contains(got, "via mirror mirror.example.test/a a") {
		t.Errorf("a long mirror: %d bytes: %.200q", len(got), got)
	}
	// And the whole message, whatever the reference's length.
	p.Ref = "registry.example.test/" + strings.Repeat("r", 3000) + ":v1"
	if got := servingMessage(p); len(got) > maxMessage {
		t.Errorf("a long reference: %d bytes", len(got))
	}
}

// TestRenderServingMirror: the Serving condition names the mirror the
// published pointer records.
func TestRenderServingMirror(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.fc.mu.Lock()
	r.fc.ptr.Mirror = "mirror.example.test/acme"
	r.fc.mu.Unlock()
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	checkCond(t, r, TypeServing, metav1.ConditionTrue, ReasonAvailable, "Serving "+digest1+" from "+testImage+" via mirror mirror.example.test/acme")
}

// TestServingNamesMirrorRealAPIServer syncs an image through a
// registries.conf mirror (its source registry does not exist) and reads
// the Serving condition a real apiserver holds.
func TestServingNamesMirrorRealAPIServer(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	_, digest := r.push("mirror/acme/catalog:v1", catalogImage(t, "tiny"))
	mirror := r.proxy.Host + "/mirror/acme"
	rc := &regconf.Config{Registries: []regconf.Registry{{Prefix: "src.example.test/acme", Location: "src.example.test/acme",
		Mirrors: []regconf.Mirror{{Location: mirror}}}}}
	src, err := source.New(source.WithHosts(source.Host{Name: r.proxy.Host, PlainHTTP: true}), source.WithDockerConfig(false),
		source.WithRetry(0, 10*time.Millisecond, 50*time.Millisecond), source.WithRegistriesConf(rc))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	image := "src.example.test/acme/catalog:v1"
	res, err := pipeline.New(src, r.store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true)).Run(context.Background(), catalogspec.Catalog{Name: "mirrored", Image: catalogspec.ParseImage(image)})
	if err != nil || res.Mirror != mirror {
		t.Fatalf("sync: %+v %v", res, err)
	}
	c.create(t, "mirrored", image)
	rec := record(t, c, "mirrored")
	cc := NewClusterCatalogs(c.dyn)
	w, err := NewWriter(c.dyn, cc, r.store, testBaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { cc.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	v, _ := rec.wait(15*time.Second, "Serving True", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable)
	})
	want := "Serving " + digest + " from " + image + " via mirror " + mirror
	if got := v.status.Condition(TypeServing).Message; got != want {
		t.Fatalf("Serving message %q, want %q", got, want)
	}
}

// TestRenderServingVerifiedBy: the Serving condition says what verified
// the signature of what is served, as the published pointer records it.
func TestRenderServingVerifiedBy(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.fc.mu.Lock()
	r.fc.ptr.Mirror = "mirror.example.test/acme"
	r.fc.ptr.VerifiedBy = `keyless identity ci@example.test issuer https://issuer.example.test (rule "acme")`
	r.fc.mu.Unlock()
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	checkCond(t, r, TypeServing, metav1.ConditionTrue, ReasonAvailable, "Serving "+digest1+" from "+testImage+
		` via mirror mirror.example.test/acme, signature verified by keyless identity ci@example.test issuer https://issuer.example.test (rule "acme")`)
}
