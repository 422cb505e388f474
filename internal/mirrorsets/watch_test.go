package mirrorsets_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/internal/mirrorsets"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

var (
	crdGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	idmsGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagedigestmirrorsets"}
	itmsGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagetagmirrorsets"}
)

// env is a real kube-apiserver, a source and a mirror registry (each
// behind a counting proxy) holding the same catalog, and a Watcher.
type env struct {
	dyn                dynamic.Interface
	disc               mirrorsets.Discovery
	srcProxy, mirProxy *servers.Proxy
	digest             string
	w                  *mirrorsets.Watcher
	src                *source.Client
	logs               *logbuf.Buffer
}

func newEnv(t *testing.T, withCRDs bool) *env {
	kube := servers.StartKube(t)
	cfg, err := kubeclient.Config(kube.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := mirrorsets.NewDiscovery(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dyn: dynamic.NewForConfigOrDie(cfg), disc: disc, logs: &logbuf.Buffer{}}
	srcReg, mirReg := servers.StartRegistry(t), servers.StartRegistry(t)
	e.srcProxy, e.mirProxy = servers.NewProxy(t, srcReg.URL), servers.NewProxy(t, mirReg.URL)
	img := imagebuild.FromDir(filepath.Join("..", "..", "testdata/fbc/tiny/configs"), "/configs")
	for _, target := range []string{srcReg.Host + "/acme/catalog:v1", mirReg.Host + "/mirror/acme/catalog:v1"} {
		if e.digest, err = imagebuild.Push(context.Background(), imagebuild.NewRegClient(srcReg.Host, mirReg.Host), target, img); err != nil {
			t.Fatal(err)
		}
	}
	if withCRDs {
		e.installCRDs(t)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.w = mirrorsets.New(e.dyn, e.disc, nil, log)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.w.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	e.src, err = source.New(source.WithHosts(source.Host{Name: e.srcProxy.Host, PlainHTTP: true}, source.Host{Name: e.mirProxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(0, 10*time.Millisecond, 50*time.Millisecond), source.WithMirrors(e.w))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.src.Close() })
	return e
}

// installCRDs creates the two CRDs and waits until discovery lists both.
func (e *env) installCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range []string{"imagedigestmirrorset-crd.yaml", "imagetagmirrorset-crd.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		if _, err := e.dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		l, err := e.disc.ServerResourcesForGroupVersion(mirrorsets.GroupVersion)
		if err == nil && len(l.APIResources) >= 2 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("mirror sets not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run syncs image into a fresh store (so every run pulls) with the
// counters reset.
func (e *env) run(t *testing.T, image string) (pipeline.Result, error) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.srcProxy.ResetCounts()
	e.mirProxy.ResetCounts()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return pipeline.New(e.src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true)).Run(ctx, catalogspec.Catalog{Name: "cat", Image: catalogspec.ParseImage(image)})
}

func total(p *servers.Proxy) int {
	n := 0
	for _, c := range p.Counts() {
		n += c
	}
	return n
}

// apply creates or replaces a mirror set and waits until the watcher has
// rebuilt its rules since.
func (e *env) apply(t *testing.T, gvr schema.GroupVersionResource, kind, name, field string, entries ...map[string]any) {
	t.Helper()
	items := make([]any, len(entries))
	for i, en := range entries {
		items[i] = en
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": mirrorsets.GroupVersion, "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": map[string]any{field: items}}}
	v := e.w.Version()
	ctx := context.Background()
	cur, err := e.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		u.SetResourceVersion(cur.GetResourceVersion())
		_, err = e.dyn.Resource(gvr).Update(ctx, u, metav1.UpdateOptions{})
	} else {
		_, err = e.dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	e.waitVersion(t, v)
}

func (e *env) waitVersion(t *testing.T, after uint64) {
	t.Helper()
	for i := 0; e.w.Version() <= after; i++ {
		if i > 600 {
			t.Fatal("the watcher never saw the change")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func entry(src, mir, policy string) map[string]any {
	m := map[string]any{"source": src, "mirrors": []any{mir}}
	if policy != "" {
		m["mirrorSourcePolicy"] = policy
	}
	return m
}

// TestMirrorSets follows digest and tag mirror sets in a real apiserver
// and shows, by the requests each registry got, where pulls go.
func TestMirrorSets(t *testing.T) {
	e := newEnv(t, true)
	srcRepo, mirRepo := e.srcProxy.Host+"/acme", e.mirProxy.Host+"/mirror/acme"
	tag, byDigest := srcRepo+"/catalog:v1", srcRepo+"/catalog@"+e.digest
	expect := func(what string, res pipeline.Result, err error, mirror string, srcN, mirN bool) {
		t.Helper()
		if err != nil || res.Digest != e.digest || res.Mirror != mirror {
			t.Fatalf("%s: %+v %v (want mirror %q)", what, res, err, mirror)
		}
		if (total(e.srcProxy) > 0) != srcN || (total(e.mirProxy) > 0) != mirN {
			t.Fatalf("%s: source got %v, mirror %v", what, e.srcProxy.Counts(), e.mirProxy.Counts())
		}
	}

	res, err := e.run(t, tag)
	expect("no mirror sets", res, err, "", true, false)

	e.apply(t, idmsGVR, "ImageDigestMirrorSet", "acme", "imageDigestMirrors", entry(srcRepo, mirRepo, ""))
	res, err = e.run(t, byDigest)
	expect("digest pull with a digest mirror set", res, err, mirRepo, false, true)
	res, err = e.run(t, tag)
	expect("tag pull with a digest mirror set", res, err, "", true, false)

	e.apply(t, itmsGVR, "ImageTagMirrorSet", "acme", "imageTagMirrors", entry(srcRepo, mirRepo, ""))
	res, err = e.run(t, tag)
	expect("tag pull with a tag mirror set", res, err, mirRepo, false, true)

	// A malformed object is skipped with a log; the others stay in force.
	e.apply(t, idmsGVR, "ImageDigestMirrorSet", "broken", "imageDigestMirrors", entry(srcRepo, "not a mirror", ""))
	if !strings.Contains(e.logs.String(), `image mirror set skipped" kind=ImageDigestMirrorSet name=broken`) {
		t.Fatalf("no log of the malformed object:\n%s", e.logs.String())
	}
	res, err = e.run(t, byDigest)
	expect("digest pull next to a malformed set", res, err, mirRepo, false, true)

	// NeverContactSource with the mirror failing: the pull fails and the
	// source is never asked.
	e.apply(t, idmsGVR, "ImageDigestMirrorSet", "acme", "imageDigestMirrors", entry(srcRepo, mirRepo, mirrorsets.NeverContactSource))
	e.mirProxy.Inject(servers.Status(503), 0)
	res, err = e.run(t, byDigest)
	if err == nil || total(e.srcProxy) != 0 || e.mirProxy.Count(servers.ManifestHEAD) == 0 {
		t.Fatalf("never contact source, mirror down: %+v %v; source %v mirror %v", res, err, e.srcProxy.Counts(), e.mirProxy.Counts())
	}
	// Back to AllowContactingSource: the source serves it.
	e.apply(t, idmsGVR, "ImageDigestMirrorSet", "acme", "imageDigestMirrors", entry(srcRepo, mirRepo, mirrorsets.AllowContactingSource))
	res, err = e.run(t, byDigest)
	if err != nil || res.Mirror != "" || e.srcProxy.Count(servers.ManifestHEAD) != 1 {
		t.Fatalf("allow contacting source, mirror down: %+v %v; source %v", res, err, e.srcProxy.Counts())
	}
	e.mirProxy.Clear()

	// The tag mirror set is deleted: tags go to the source again.
	v := e.w.Version()
	if err := e.dyn.Resource(itmsGVR).Delete(context.Background(), "acme", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitVersion(t, v)
	res, err = e.run(t, tag)
	expect("tag pull after the tag mirror set is deleted", res, err, "", true, false)
	// The malformed object was logged once, not at every rebuild since.
	if n := strings.Count(e.logs.String(), "image mirror set skipped"); n != 1 {
		t.Fatalf("the malformed object was logged %d times", n)
	}
}

// TestNoMirrorSetCRDs: a cluster that does not serve the kinds starts no
// informer, says so once, and pulls as before.
func TestNoMirrorSetCRDs(t *testing.T) {
	e := newEnv(t, false)
	if n := strings.Count(e.logs.String(), "the cluster serves no ImageDigestMirrorSet"); n != 1 {
		t.Fatalf("%d info lines about the missing kinds:\n%s", n, e.logs.String())
	}
	res, err := e.run(t, e.srcProxy.Host+"/acme/catalog:v1")
	if err != nil || res.Mirror != "" || res.Digest != e.digest || total(e.mirProxy) != 0 || e.srcProxy.Count(servers.ManifestHEAD) != 1 {
		t.Fatalf("%+v %v; source %v mirror %v", res, err, e.srcProxy.Counts(), e.mirProxy.Counts())
	}
	// A digest reference resolves without a request, as without mirrors.
	res, err = e.run(t, e.srcProxy.Host+"/acme/catalog@"+e.digest)
	if err != nil || e.srcProxy.Count(servers.ManifestHEAD) != 0 || total(e.mirProxy) != 0 {
		t.Fatalf("digest: %+v %v; source %v", res, err, e.srcProxy.Counts())
	}
}
