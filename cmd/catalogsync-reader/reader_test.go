package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/servers"
)

// sample is the catalog examples/ ships, synced by the real catalogsync.
var sample = "ocidir://" + must(filepath.Abs("../../examples/sample-catalog")) + ":v1"

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// syncSample publishes the sample catalog as name with `catalogsync sync`
// (args and env select the store).
func syncSample(t *testing.T, name string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(servers.CatalogsyncBinary(t), append([]string{"sync", "--name", name, "--image", sample, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sync: %v\n%s", err, out)
	}
}

// reader runs catalogsync-reader in this process until the test ends and
// returns its base URL once /readyz answers.
func reader(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"--addr", addr}, args...), io.Discard, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d after the stop\n%s", code, stderr.String())
		}
	})
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case code := <-done:
			t.Fatalf("exit %d before serving\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if i > 3000 {
			t.Fatalf("never ready\n%s", stderr.String())
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// checkServes reads the sample catalog through every content route.
func checkServes(t *testing.T, url string) {
	t.Helper()
	if code, body := get(t, url+"/catalogs/sample/api/v1/all"); code != 200 || !strings.Contains(body, `"schema":"olm.package"`) {
		t.Fatalf("all: %d %.200s", code, body)
	}
	if code, body := get(t, url+"/catalogs/sample/api/v1/metas?schema=olm.package"); code != 200 || strings.Count(body, `"schema":"olm.package"`) == 0 {
		t.Fatalf("metas: %d %.200s", code, body)
	}
	resp, err := http.Post(url+"/catalogs/sample/api/v1/graphql", "application/json", strings.NewReader(`{"query":"{ olmpackages { name } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"olmpackages":[{"name":`) {
		t.Fatalf("graphql: %d %.300s", resp.StatusCode, b)
	}
	if code, _ := get(t, url+"/catalogs/absent/api/v1/all"); code != http.StatusNotFound {
		t.Fatalf("a catalog never published: %d", code)
	}
	if code, body := get(t, url+"/metrics"); code != 200 || !strings.Contains(body, `route="/catalogs/{name}/api/v1/all"`) {
		t.Fatalf("metrics: %d %.300s", code, body)
	}
}

func TestServesWhatSyncPublishedFromADirectory(t *testing.T) {
	dir := t.TempDir()
	syncSample(t, "sample", nil, "--store", dir)
	checkServes(t, reader(t, "--store", dir))
}

// TestServesABucketAndWritesNothing reads a real MinIO bucket through a
// proxy that records each request's method: reads only.
func TestServesABucketAndWritesNothing(t *testing.T) {
	m := servers.SharedMinIO(t)
	env := []string{"CATALOGSYNC_S3_BUCKET=" + m.NewBucket(t), "CATALOGSYNC_S3_ENDPOINT=" + m.Endpoint,
		"CATALOGSYNC_S3_REGION=" + m.Region, "CATALOGSYNC_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey, "CATALOGSYNC_S3_PREFIX=readers"}
	syncSample(t, "sample", env)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	target, err := neturl.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	methods := map[string]int{}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the signed Host
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods[r.Method]++
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer recorder.Close()
	t.Setenv("CATALOGSYNC_S3_ENDPOINT", recorder.URL)
	checkServes(t, reader(t))
	mu.Lock()
	defer mu.Unlock()
	if methods[http.MethodGet]+methods[http.MethodHead] == 0 {
		t.Fatalf("the bucket was not read through the proxy: %v", methods)
	}
	for method, n := range methods {
		if method != http.MethodGet && method != http.MethodHead {
			t.Fatalf("%d %s requests to the bucket: a reader writes nothing (%v)", n, method, methods)
		}
	}
}

// TestServesACatalogPublishedAfterItStarted: a reader started before the
// first publish serves the catalog once it is published, within the
// content cache's pointer TTL, without a restart.
func TestServesACatalogPublishedAfterItStarted(t *testing.T) {
	dir := t.TempDir()
	url := reader(t, "--store", dir)
	if code, _ := get(t, url+"/catalogs/sample/api/v1/all"); code != http.StatusNotFound {
		t.Fatalf("before the publish: %d", code)
	}
	syncSample(t, "sample", nil, "--store", dir)
	for i := 0; ; i++ {
		code, _ := get(t, url+"/catalogs/sample/api/v1/all")
		if code == http.StatusOK {
			break
		}
		if i > 300 {
			t.Fatalf("still %d after the publish", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStopsOnSIGTERM runs the binary: the first SIGTERM ends it with
// exit code 0 once requests in flight are done.
func TestStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	syncSample(t, "sample", nil, "--store", dir)
	addr := freeport.Addr(t)
	cmd := exec.Command(servers.ReaderBinary(t), "--store", dir, "--addr", addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/catalogs/sample/api/v1/all"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 3000 {
			cmd.Process.Kill()
			t.Fatalf("never served\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
}
