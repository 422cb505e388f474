package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/buildindex"
	"github.com/catalogsync/catalogsync/sync/publishevent"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// The deploy/local compose topology with real binaries: MinIO, a
// Distribution registry notifying serve, serve on S3 with --event-sink.
// A push is published to MinIO, served over HTTP and announced to the sink.
func TestLocalStack(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := m.NewBucket(t)
	s3Env(t, m, bucket)

	var (
		mu     sync.Mutex
		events []event.Event
	)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := cehttp.NewEventFromHTTPRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		events = append(events, *ev)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()

	addr := freeport.Addr(t)
	reg := servers.StartRegistry(t, servers.WithNotifications("http://"+addr+"/hooks/registry", map[string]string{"Authorization": "local-secret"}))
	t.Setenv("REGISTRY_HOOK_SECRET", "local-secret")
	cfg := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`registries:
- name: %s
  plainHTTP: true
catalogs:
- name: local
  image: %s/acme/catalog:v1
webhooks:
  receivers:
  - name: registry
    type: distribution
    secret: env:REGISTRY_HOOK_SECRET
`, reg.Host, reg.Host)), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--addr", addr, "--no-docker-config",
			"--poll-check-interval", "1h", "--base-url", "http://" + addr, "--event-sink", sink.URL}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(errb.String())
		}
	}()
	waitHTTP(t, "http://"+addr+"/readyz")

	fbcDir, _ := filepath.Abs("../../testdata/fbc/community-v4.21-3pkgs/configs")
	want, err := buildindex.Build(ctx, fbcDir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	digest, err := imagebuild.Push(ctx, imagebuild.NewRegClient(reg.Host), reg.Host+"/acme/catalog:v1", imagebuild.FromDir(fbcDir, "/configs"))
	if err != nil {
		t.Fatal(err)
	}

	// Published in MinIO: read the pointer with the S3 store itself.
	st, err := s3.New(ctx, s3.Config{Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "push published to MinIO", 30*time.Second, func() bool {
		p, _, err := catalog.Current(ctx, st, "local")
		return err == nil && p.Digest == digest
	})

	resp, err := http.Get("http://" + addr + "/catalogs/local/api/v1/all")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		n++
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sc.Err() != nil || n != want.Objects {
		t.Fatalf("served %d objects (status %d, %v), want %d", n, resp.StatusCode, sc.Err(), want.Objects)
	}

	var got publishevent.Data
	eventually(t, "published event at the sink", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			var d publishevent.Data
			if ev.Type() == publishevent.Type && ev.DataAs(&d) == nil && d.Digest == digest {
				got = d
				return true
			}
		}
		return false
	})
	if got.Catalog != "local" || got.URL != "http://"+addr+"/catalogs/local" || got.Objects != want.Objects {
		t.Fatalf("event data %+v", got)
	}
}
