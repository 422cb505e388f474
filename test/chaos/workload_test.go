package chaos

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// catalogs the workload pushes to.
var catalogNames = []string{"alpha", "beta", "gamma"}

// marker names a catalog's generation inside its content, so a read
// tells which push it shows and whether it mixes two.
var markerRE = regexp.MustCompile(`chaos-gen:([0-9]+):`)

// catalogDir writes generation gen of catalog name: one package whose
// description carries the marker.
func catalogDir(dir, name string, gen int) (string, error) {
	d := filepath.Join(dir, fmt.Sprintf("%s-%d", name, gen), "configs")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	fbc := fmt.Sprintf(`---
schema: olm.package
name: %[1]s
defaultChannel: stable
description: "chaos-gen:%[2]d: %[1]s"
---
schema: olm.channel
name: stable
package: %[1]s
entries:
  - name: %[1]s.v0.%[2]d.0
---
schema: olm.bundle
name: %[1]s.v0.%[2]d.0
package: %[1]s
image: example.test/bundles/%[1]s:v0.%[2]d.0
properties:
  - type: olm.package
    value:
      packageName: %[1]s
      version: 0.%[2]d.0
`, name, gen)
	return d, os.WriteFile(filepath.Join(d, "catalog.yaml"), []byte(fbc), 0o644)
}

// workload drives the cluster and records what it did.
type workload struct {
	c    *cluster
	rec  *recorder
	dir  string
	seed uint64

	mu   sync.Mutex
	gens map[string]int // latest generation pushed per catalog
	ops  atomic.Int64
}

func newWorkload(c *cluster, seed uint64) *workload {
	return &workload{c: c, rec: c.rec, dir: c.t.TempDir(), seed: seed, gens: map[string]int{}}
}

func (w *workload) image(name string) string { return w.c.regHost + "/chaos/" + name + ":v1" }

// createCatalogs makes the ClusterCatalogs and pushes their first
// generation.
func (w *workload) createCatalogs(ctx context.Context) error {
	for _, n := range catalogNames {
		if err := w.push(ctx, n); err != nil {
			return err
		}
		if err := w.c.createCatalog(ctx, n, w.image(n)); err != nil {
			return err
		}
	}
	return nil
}

// push pushes the next generation of catalog name.
func (w *workload) push(ctx context.Context, name string) error {
	w.mu.Lock()
	gen := w.gens[name] + 1
	w.gens[name] = gen
	w.mu.Unlock()
	dir, err := catalogDir(w.dir, name, gen)
	if err != nil {
		return err
	}
	start := w.rec.now()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	d, err := imagebuild.Push(ctx, w.c.rc, w.image(name), imagebuild.FromDir(dir, "/configs"))
	o := op{Kind: kPush, Start: start, Catalog: name, Replica: -1, Gen: gen, Digest: d, OK: err == nil}
	if err == nil {
		if layers, lerr := imagebuild.PushedLayers(ctx, w.c.rc, w.image(name)); lerr == nil && len(layers) > 0 {
			o.Layer = layers[0].Descriptor.Digest.String()
		}
	} else {
		o.Err = err.Error()
	}
	o.End = w.rec.now()
	w.rec.add(o)
	w.ops.Add(1)
	return err
}

// run drives every kind of operation until ctx ends.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	loop := func(stream uint64, every time.Duration, f func(ctx context.Context, rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.seed, stream))
			for ctx.Err() == nil {
				f(ctx, rng)
				sleep(ctx, every/2+time.Duration(rng.Int64N(int64(every))))
			}
		}()
	}
	loop(1, 3*time.Second, func(ctx context.Context, rng *rand.Rand) {
		_ = w.push(ctx, catalogNames[rng.IntN(len(catalogNames))])
	})
	loop(2, time.Second, w.trigger)
	loop(3, 300*time.Millisecond, w.read)
	loop(4, 300*time.Millisecond, w.read)
	loop(5, 15*time.Second, w.gcPass)
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watch(ctx)
	}()
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// trigger sends one webhook, CloudEvent or REST sync for a random
// catalog to a random replica, directly (as a registry or CI would).
func (w *workload) trigger(ctx context.Context, rng *rand.Rand) {
	name := catalogNames[rng.IntN(len(catalogNames))]
	i := rng.IntN(len(w.c.replicas))
	w.send(ctx, name, i, []string{"hook", "event", "rest"}[rng.IntN(3)], rng.Uint64())
}

// send sends one trigger of name to replica i: a generic webhook
// ("hook"), a CloudEvent ("event") or a REST sync ("rest").
func (w *workload) send(ctx context.Context, name string, i int, via string, id uint64) {
	base := w.c.replicas[i].url
	var req *http.Request
	switch via {
	case "hook":
		body := fmt.Sprintf(`{"host":%q,"repository":"chaos/%s","tag":"v1"}`, w.c.regHost, name)
		mac := hmac.New(sha256.New, []byte(ciSecret))
		mac.Write([]byte(body))
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/hooks/ci", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	case "event":
		body := fmt.Sprintf(`{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterCatalog","name":%q}`, name)
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/events", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Type", "dev.knative.apiserver.ref.add")
		req.Header.Set("Ce-Source", "chaos/workload")
		req.Header.Set("Ce-Id", fmt.Sprintf("%d-%d", w.seed, id))
		req.Header.Set("Authorization", "Bearer "+eventsToken)
	default:
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/catalogs/"+name+"/sync", nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
	}
	start := w.rec.now()
	o := op{Kind: kTrigger, Start: start, Catalog: name, Replica: i, Via: via}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := w.c.http.Do(req.WithContext(cctx))
	if err == nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		o.Code = resp.StatusCode
		o.OK = resp.StatusCode/100 == 2
		if !o.OK {
			o.Err = strings.TrimSpace(string(b))
		}
	} else {
		o.Err = err.Error()
	}
	o.End = w.rec.now()
	if ctx.Err() == nil || o.OK {
		w.rec.add(o)
		w.ops.Add(1)
	}
}

// read GETs one catalog's /all through the front.
func (w *workload) read(ctx context.Context, rng *rand.Rand) {
	name := catalogNames[rng.IntN(len(catalogNames))]
	o := readAll(ctx, w.c.http, w.c.front.url, name, w.rec)
	if ctx.Err() == nil {
		o.Kind = kRead
		w.rec.add(o)
		w.ops.Add(1)
	}
}

// readAll GETs base's /all of name and describes what came back.
func readAll(ctx context.Context, c *http.Client, base, name string, rec *recorder) op {
	o := op{Catalog: name, Replica: -1, Start: rec.now()}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, base+"/catalogs/"+name+"/api/v1/all", nil)
	resp, err := c.Do(req)
	if err != nil {
		o.Err, o.End = err.Error(), rec.now()
		return o
	}
	defer resp.Body.Close()
	if r := resp.Header.Get(replicaHeader); r != "" {
		o.Replica, _ = strconv.Atoi(r)
	}
	o.Code = resp.StatusCode
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	o.End = rec.now()
	if err != nil {
		o.Err = "body: " + err.Error()
		return o
	}
	if resp.StatusCode != http.StatusOK {
		o.Err = strings.TrimSpace(string(b[:min(len(b), 200)]))
		return o
	}
	o.OK = true
	sum := sha256.Sum256(b)
	o.Sum = hex.EncodeToString(sum[:8])
	// ETag: "sha256-<hex>…": the digest the replica says it served.
	if et := strings.Trim(resp.Header.Get("ETag"), `"`); strings.HasPrefix(et, "sha256-") && len(et) >= 71 {
		o.Digest = "sha256:" + et[7:71]
	}
	for _, m := range markerRE.FindAllSubmatch(b, -1) {
		g, _ := strconv.Atoi(string(m[1]))
		o.Markers = append(o.Markers, g)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		o.Err = "body does not end with a newline"
	}
	return o
}

// gcPass runs `catalogsync gc` from a random replica's host.
func (w *workload) gcPass(ctx context.Context, rng *rand.Rand) {
	i := rng.IntN(len(w.c.replicas))
	start := w.rec.now()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := w.c.gc(cctx, i)
	o := op{Kind: kGC, Start: start, End: w.rec.now(), Replica: i, OK: err == nil}
	if err != nil {
		o.Err = err.Error()
	}
	if ctx.Err() == nil {
		w.rec.add(o)
		w.ops.Add(1)
	}
}

// watch records every ClusterCatalog status the apiserver sends, watching
// again (from the last resourceVersion) when a watch ends.
func (w *workload) watch(ctx context.Context) {
	res := w.c.dyn.Resource(status.GVR)
	rv := ""
	for ctx.Err() == nil {
		wi, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: false})
		if err != nil {
			sleep(ctx, time.Second)
			rv = ""
			continue
		}
		for ev := range wi.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				if ev.Type == watch.Error {
					rv = ""
				}
				continue
			}
			rv = u.GetResourceVersion()
			w.rec.add(statusOp(u, w.rec.now()))
			w.ops.Add(1)
		}
		wi.Stop()
	}
}

// statusOp reads what the checker needs of a ClusterCatalog.
func statusOp(u *unstructured.Unstructured, at time.Duration) op {
	o := op{Kind: kStatus, Start: at, End: at, Catalog: u.GetName(), Replica: -1}
	o.RV, _ = strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Serving" {
			o.Serving, _ = m["status"].(string)
		}
	}
	ref, _, _ := unstructured.NestedString(u.Object, "status", "resolvedSource", "image", "ref")
	if _, d, ok := strings.Cut(ref, "@"); ok {
		o.Digest = d
	}
	if s, ok, _ := unstructured.NestedString(u.Object, "status", "lastUnpacked"); ok {
		o.LastUnpacked, _ = time.Parse(time.RFC3339, s)
	}
	return o
}
