// Package e2e runs scenarios on the whole real stack: etcd and
// kube-apiserver with the ClusterCatalog CRD, a CNCF Distribution registry
// that sends push notifications (behind a fault-injecting proxy for pulls),
// MinIO, and catalogsync serve as its own process built from this
// repository. Each scenario is bounded in time.
//
// CATALOGSYNC_E2E_SOAK=<duration> lengthens the load scenario (default
// 30 s); CATALOGSYNC_E2E_COLDSTART=1 runs the scale-from-zero report; the
// 220 MB scenarios need the shared community-v4.21 catalog (../shared, or
// CATALOGSYNC_SHARED) and skip without it.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regclient/regclient"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// hookSecret authenticates the registry's notifications to every replica;
// ciSecret signs the generic (HMAC) webhooks a CI system would send.
const (
	hookSecret = "e2e-registry-notify-secret"
	ciSecret   = "e2e-ci-hmac-secret"
)

// root is the repository's top folder.
var root = func() string {
	p, _ := filepath.Abs("../..")
	return p
}()

// options shape a stack.
type options struct {
	replicas int
	// ownKube: a kube-apiserver of the scenario's own, which it may
	// stop. Scenarios that call t.Parallel need one: replicas sync every
	// ClusterCatalog of their cluster, and each scenario deletes them all
	// when it ends.
	ownKube   bool
	ownMinIO  bool     // a MinIO this test may stop
	args      []string // more serve flags, for every replica
	noReplica bool     // start no replica: the test starts them (StartReplica)
	s3Proxy   bool     // replicas reach MinIO through a proxy (s.s3Proxy)
	env       []string // more environment, for every replica (GOMEMLIMIT=…)
}

// stack is one scenario's servers: the cluster and MinIO may be shared with
// other scenarios of this package; the registry, the bucket and the
// replicas are its own.
type stack struct {
	t        *testing.T
	kube     *servers.KubeAPIServer
	dyn      dynamic.Interface
	reg      *servers.Registry
	proxy    *servers.Proxy // pulls go through it; pushes go to reg directly
	minio    *servers.MinIO
	s3Proxy  *servers.Proxy // with options.s3Proxy
	bucket   string
	store    storage.Store // the bucket, read directly by the test
	rc       *regclient.RegClient
	addrs    []string
	args     [][]string
	env      []string
	replicas []*servers.Catalogsync
}

func newStack(t *testing.T, o options) *stack {
	t.Helper()
	if o.replicas == 0 {
		o.replicas = 1
	}
	s := &stack{t: t, env: o.env}
	if o.ownKube {
		s.kube = servers.StartKube(t)
	} else {
		s.kube = servers.SharedKube(t)
	}
	if o.ownMinIO {
		s.minio = servers.StartMinIO(t)
	} else {
		s.minio = servers.SharedMinIO(t)
	}
	s.bucket = s.minio.NewBucket(t)
	s.kubectl("", "apply", "-f", filepath.Join(root, "deploy/crd/clustercatalog.yaml"))
	s.kubectl("", "wait", "--for", "condition=Established", "--timeout", "60s", "crd/clustercatalogs.olm.operatorframework.io")
	// Replicas sync every ClusterCatalog in the cluster: leave none behind
	// for the next scenario.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.dyn.Resource(status.GVR).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	rcfg, err := kubeclient.Config(s.kube.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if s.dyn, err = dynamic.NewForConfig(rcfg); err != nil {
		t.Fatal(err)
	}

	// The registry notifies every replica directly, as a registry with
	// one endpoint per replica (or a broker fanning out) would.
	var regOpts []servers.RegistryOption
	for range o.replicas {
		addr := servers.FreeAddr(t)
		s.addrs = append(s.addrs, addr)
		regOpts = append(regOpts, servers.WithNotifications("http://"+addr+"/hooks/registry", map[string]string{"Authorization": hookSecret}))
	}
	s.reg = servers.StartRegistry(t, regOpts...)
	s.proxy = servers.NewProxy(t, s.reg.URL)
	s.rc = imagebuild.NewRegClient(s.reg.Host, s.proxy.Host)

	cfg := filepath.Join(t.TempDir(), "catalogsync.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`registries:
- name: %s
  plainHTTP: true
webhooks:
  hostAliases:
  - host: %s
    aliases: [%s]
  receivers:
  - name: registry
    type: distribution
    secret: env:REGISTRY_HOOK_SECRET
  - name: ci
    type: generic
    secret: env:CI_HOOK_SECRET
    host: %s
`, s.proxy.Host, s.proxy.Host, s.reg.Host, s.proxy.Host)), 0o644)

	// Credentials in the config, not the environment: t.Setenv would
	// forbid t.Parallel.
	sc := s3.Config{Bucket: s.bucket, Endpoint: s.minio.Endpoint, Region: s.minio.Region, PathStyle: true,
		AccessKeyID: s.minio.AccessKey, SecretAccessKey: s.minio.SecretKey}
	st, err := s3.New(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	s.store = st

	s3Endpoint := s.minio.Endpoint
	if o.s3Proxy {
		s.s3Proxy = servers.NewProxy(t, s.minio.Endpoint)
		s3Endpoint = s.s3Proxy.URL
	}
	for i, addr := range s.addrs {
		args := []string{
			"--config", cfg,
			"--clustercatalogs", "--kubeconfig", s.kube.Kubeconfig,
			"--base-url", "http://" + addr,
			"--s3-bucket", s.bucket, "--s3-endpoint", s3Endpoint, "--s3-region", s.minio.Region, "--s3-path-style",
			"--no-docker-config", "--poll-check-interval", "1h",
			"--replica-id", fmt.Sprintf("replica-%d", i),
			"--tmp-dir", t.TempDir(),
		}
		s.args = append(s.args, append(args, o.args...))
		s.replicas = append(s.replicas, nil)
		if !o.noReplica {
			s.startReplica(i)
		}
	}
	return s
}

// startReplica starts replica i (for the first time).
func (s *stack) startReplica(i int) *servers.Catalogsync {
	s.t.Helper()
	env := append([]string{"REGISTRY_HOOK_SECRET=" + hookSecret, "CI_HOOK_SECRET=" + ciSecret,
		"AWS_ACCESS_KEY_ID=" + s.minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.minio.SecretKey}, s.env...)
	s.replicas[i] = servers.StartCatalogsyncAt(s.t, s.addrs[i], s.args[i], env...)
	return s.replicas[i]
}

func (s *stack) kubectl(stdin string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(servers.Binary(s.t, "kubectl"), append([]string{"--kubeconfig", s.kube.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// injectLayer applies f to the layer of the next sync: a sync GETs two
// blobs, the image config (small) and then the layer, so the fault goes
// to the second blob GET (the first passes untouched).
func (s *stack) injectLayer(f servers.Fault) {
	s.proxy.Inject(func(w http.ResponseWriter, r *http.Request, next http.Handler) { next.ServeHTTP(w, r) }, 1, servers.BlobGET)
	s.proxy.Inject(f, 1, servers.BlobGET)
}

// image is the reference catalogs pull: through the proxy.
func (s *stack) image(repoTag string) string { return s.proxy.Host + "/" + repoTag }

// createCatalog creates a ClusterCatalog for repoTag (pulled through the
// proxy).
func (s *stack) createCatalog(name, repoTag string) {
	s.t.Helper()
	s.kubectl(fmt.Sprintf(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: %s
spec:
  source:
    type: Image
    image:
      ref: %s
`, name, s.image(repoTag)), "apply", "-f", "-")
}

// push pushes img to the registry directly, as CI would; the registry
// notifies the replicas.
func (s *stack) push(repoTag string, img imagebuild.Image) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := imagebuild.Push(ctx, s.rc, s.reg.Host+"/"+repoTag, img)
	if err != nil {
		s.t.Fatalf("push %s: %v", repoTag, err)
	}
	return d
}

// condition is one status condition of a ClusterCatalog.
type condition struct {
	Type, Status, Reason, Message string
	ObservedGeneration            int64
}

// ccStatus is what the test reads of a ClusterCatalog's status.
type ccStatus struct {
	Conditions []condition
	Resolved   string // status.resolvedSource.image.ref
	BaseURL    string
}

func (c ccStatus) cond(typ string) condition {
	for _, x := range c.Conditions {
		if x.Type == typ {
			return x
		}
	}
	return condition{}
}

func (s *stack) status(name string) ccStatus {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := s.dyn.Resource(status.GVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ccStatus{}
	}
	return parseStatus(u)
}

func parseStatus(u *unstructured.Unstructured) ccStatus {
	var st ccStatus
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		str := func(k string) string { v, _ := m[k].(string); return v }
		g, _ := m["observedGeneration"].(int64)
		st.Conditions = append(st.Conditions, condition{str("type"), str("status"), str("reason"), str("message"), g})
	}
	st.Resolved, _, _ = unstructured.NestedString(u.Object, "status", "resolvedSource", "image", "ref")
	st.BaseURL, _, _ = unstructured.NestedString(u.Object, "status", "urls", "base")
	return st
}

// waitStatus polls the ClusterCatalog until ok accepts its status.
func (s *stack) waitStatus(name, what string, d time.Duration, ok func(ccStatus) bool) ccStatus {
	s.t.Helper()
	var last ccStatus
	eventually(s.t, what, d, func() bool {
		last = s.status(name)
		return ok(last)
	}, func() string { return fmt.Sprintf("last status: %+v", last) })
	return last
}

// servingDigest waits for Serving True on digest.
func (s *stack) waitServing(name, digest string, d time.Duration) ccStatus {
	s.t.Helper()
	return s.waitStatus(name, name+" Serving "+digest, d, func(st ccStatus) bool {
		return st.cond("Serving").Status == "True" && strings.HasSuffix(st.Resolved, "@"+digest) &&
			st.cond("Progressing").Reason == "Succeeded"
	})
}

// pointer reads the published pointer from the bucket.
func (s *stack) pointer(name string) (catalog.Pointer, bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := catalog.Current(ctx, s.store, name)
	if err != nil {
		return catalog.Pointer{}, false
	}
	return p, true
}

// contentKeys lists the bucket's keys under a catalog's digest.
func (s *stack) contentKeys(name, digest string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key, err := catalog.ContentKey(name, digest)
	if err != nil {
		s.t.Fatal(err)
	}
	// The digest's directory: content sharing lines with earlier content
	// has delta.jsonl instead of catalog.jsonl.
	objs, err := s.store.List(ctx, path.Dir(key)+"/")
	if err != nil {
		s.t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// metrics sums a counter of replica i over the label sets containing all
// of labels.
func metric(t *testing.T, c *servers.Catalogsync, name string, labels ...string) int {
	t.Helper()
	_, body := get(t, c.URL+"/metrics")
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if match {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// get fetches url; errors fail the test.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, b
}

func eventually(t *testing.T, what string, d time.Duration, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, f := range detail {
				msg += "\n" + f()
			}
			t.Fatalf("timed out after %v: %s%s", d, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fbcDir is a catalog in the repository's testdata.
func fbcDir(name string) string { return filepath.Join(root, "testdata/fbc", name, "configs") }

// sharedCommunity is the 13.9 MB community-v4.21 catalog beside the
// repository; tests that need it skip without it.
func sharedCommunity(t *testing.T) string {
	t.Helper()
	p := sharedCommunityPath()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("needs the shared community-v4.21 catalog at %s (absent: %v)", p, err)
	}
	return p
}

// generated returns a folder with copies renamed copies of src, made once
// per test binary and kept for it.
var generatedDirs sync.Map

func generated(t *testing.T, src string, copies int) string {
	t.Helper()
	key := fmt.Sprintf("%s#%d", src, copies)
	if v, ok := generatedDirs.Load(key); ok {
		return v.(string)
	}
	dir, err := servers.ProcessTempDir("catalogsync-e2e-fbc")
	if err != nil {
		t.Fatal(err)
	}
	if err := imagebuild.GenerateCopies(src, dir, copies); err != nil {
		t.Fatal(err)
	}
	generatedDirs.Store(key, dir)
	return dir
}

// unshared copies a catalog folder with a newline added to every file:
// the same catalog, but no file has the bytes of any file published
// before, so an incremental sync parses and uploads all of it.
func unshared(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString("\n")
		return errors.Join(err, f.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// jsonLines checks that b is complete newline-delimited JSON.
func jsonLines(b []byte) error {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return fmt.Errorf("does not end with a newline (truncated?)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for n := 0; ; n++ {
		var v map[string]any
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("object %d: %w", n, err)
		}
	}
}

// transition is a change of a ClusterCatalog's Progressing condition.
type transition struct {
	at              time.Duration // since the recorder started
	reason, message string
}

// recordProgressing polls name's Progressing condition every 50 ms until
// stop is called and returns every distinct (reason, message) it saw.
func (s *stack) recordProgressing(name string) (stop func() []transition) {
	start := time.Now()
	var out []transition
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			u, err := s.dyn.Resource(status.GVR).Get(ctx, name, metav1.GetOptions{})
			cancel()
			if err == nil {
				c := parseStatus(u).cond("Progressing")
				if n := len(out); n == 0 || out[n-1].reason != c.Reason || out[n-1].message != c.Message {
					out = append(out, transition{time.Since(start), c.Reason, c.Message})
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() []transition {
		close(done)
		<-finished
		return out
	}
}
