package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// A real registry notifies a running serve: a push publishes the catalog,
// new content on the tag publishes again, and pulls trigger nothing.
func TestServeWebhookEndToEnd(t *testing.T) {
	addr := freeport.Addr(t)
	const secret = "registry-notify-secret"
	reg := servers.StartRegistry(t, servers.WithNotifications("http://"+addr+"/hooks/registry", map[string]string{"Authorization": secret}))
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	t.Setenv("REGISTRY_HOOK_SECRET", secret)
	cfg := filepath.Join(dir, "catalogsync.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`storage:
  dir: %s
registries:
- name: %s
  plainHTTP: true
catalogs:
- name: hooked
  image: %s/acme/catalog:v1
webhooks:
  receivers:
  - name: registry
    type: distribution
    secret: env:REGISTRY_HOOK_SECRET
  - name: ci
    type: generic
    secret: ci-secret
    host: %s
`, store, reg.Host, reg.Host, reg.Host)), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--addr", addr, "--no-docker-config", "--poll-check-interval", "1h"}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(errb.String())
		}
	}()
	waitHTTP(t, "http://"+addr+"/readyz")

	st, err := fs.New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rc := imagebuild.NewRegClient(reg.Host)
	root, _ := filepath.Abs("../..")
	published := func(digest string) func() bool {
		return func() bool {
			p, _, err := catalog.Current(ctx, st, "hooked")
			return err == nil && p.Digest == digest
		}
	}

	d1, err := imagebuild.Push(ctx, rc, reg.Host+"/acme/catalog:v1", imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "first push published", 30*time.Second, published(d1))

	d2, err := imagebuild.Push(ctx, rc, reg.Host+"/acme/catalog:v1", imagebuild.FromDir(filepath.Join(root, "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "second push published", 30*time.Second, published(d2))
	// The pointer moves before the operation ends: wait for the end, so
	// the operation compared below is the push's.
	eventually(t, "the push's sync to end", 30*time.Second, func() bool { return idle(t, addr) })
	before := lastOp(t, addr)

	// Pull traffic reaches the receiver as pull events and triggers nothing.
	for _, method := range []string{http.MethodHead, http.MethodGet, http.MethodGet} {
		req, _ := http.NewRequest(method, reg.URL+"/v2/acme/catalog/manifests/v1", nil)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("pull: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	time.Sleep(2 * time.Second) // notifications are delivered asynchronously
	if after := lastOp(t, addr); after != before {
		t.Fatalf("pulls triggered a sync: last operation %s, was %s", after, before)
	}
	metrics := scrape(t, addr)
	for _, want := range []string{`outcome="triggered",source="distribution"`, `outcome="ignored",source="distribution"`} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func lastOp(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/catalogs/hooked")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		LastSync *struct {
			Operation string `json:"operation"`
			ID        string `json:"id"`
		} `json:"lastSync"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &c); err != nil || c.LastSync == nil {
		t.Fatalf("catalog view %s: %v", b, err)
	}
	return c.LastSync.Operation + c.LastSync.ID
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	eventually(t, url, 20*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scrape(t *testing.T, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// idle reports whether the catalog has no sync running or queued.
func idle(t *testing.T, addr string) bool {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/catalogs/hooked")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Running, Queued *struct{}
	}
	json.NewDecoder(resp.Body).Decode(&c)
	return c.Running == nil && c.Queued == nil
}
