package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Scenario 6: the store and the apiserver go away in the middle of a sync
// and come back. Nothing half-written is ever served or published, and
// the catalog and its status recover by themselves. Mostly waiting on
// crawling uploads and timeouts, on servers of its own: it runs beside
// the other such scenarios.
func TestStoreAndAPIServerOutages(t *testing.T) {
	t.Parallel()
	s := newStack(t, options{ownKube: true, ownMinIO: true, s3Proxy: true, args: []string{"--s3-stall-timeout", "2s"}})
	c := s.replicas[0]
	s.createCatalog("outage", "acme/outage:v1")
	d0 := s.push("acme/outage:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs"))
	s.waitServing("outage", d0, 60*time.Second)
	urls := []string{c.URL + "/catalogs/outage/api/v1/metas?schema=olm.package", c.URL + "/catalogs/outage/api/v1/all"}
	old := map[string]string{}
	for _, u := range urls {
		_, b := get(t, u)
		old[u] = sum(b)
	}
	rd := startReaders(urls, 2, 0)
	defer rd.finish()

	// midUpload pushes a new catalog (copies of the 3-package one, none
	// of whose files the published one has, so nothing is shared and the
	// whole catalog is uploaded) with uploads to MinIO crawling at 1 MB/s
	// and returns its digest once the sync is well into writing the
	// content.
	midUpload := func(t *testing.T, copies int) string {
		t.Helper()
		s.s3Proxy.Inject(servers.ThrottleUpload(1<<20), 0)
		d := s.push("acme/outage:v1", imagebuild.FromDir(unshared(t, generated(t, fbcDir("community-v4.21-3pkgs"), copies)), "/configs"))
		eventually(t, "the sync to write content", 60*time.Second, func() bool {
			v := catalogView(t, c.URL, "outage")
			return v.Running != nil && v.Running.Progress.Phase == "Indexing"
		})
		time.Sleep(time.Second) // well into the upload
		return d
	}

	t.Run("MinIO stopped mid-publish", func(t *testing.T) {
		rec := s.recordProgressing("outage")
		d1 := midUpload(t, 50)
		s.minio.Stop()
		stopped := time.Now()
		t.Logf("MinIO stopped while indexing %s", d1)
		eventually(t, "Retrying after the store went away", 60*time.Second, func() bool {
			return s.status("outage").cond("Progressing").Reason == "Retrying"
		})
		t.Logf("Retrying %v after MinIO stopped: %s", time.Since(stopped).Round(time.Millisecond), s.status("outage").cond("Progressing").Message)
		time.Sleep(2 * time.Second) // a retry or two against the dead store
		s.s3Proxy.Clear()
		s.minio.Start()
		restarted := time.Now()
		s.waitServing("outage", d1, 2*time.Minute)
		t.Logf("MinIO back; published %s %v later", d1, time.Since(restarted).Round(time.Millisecond))
		logTransitions(t, rec())
		if p, _ := s.pointer("outage"); p.Digest != d1 {
			t.Fatalf("pointer %s, want %s", p.Digest, d1)
		}
	})

	t.Run("apiserver stopped mid-sync", func(t *testing.T) {
		// The layer crawls (200 KB/s) so the apiserver is down for most
		// of the pull.
		s.injectLayer(servers.Throttle(200_000))
		d2 := s.push("acme/outage:v1", imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), 51), "/configs"))
		var v view
		eventually(t, "the pull to start", 60*time.Second, func() bool {
			v = catalogView(t, c.URL, "outage")
			return v.Running != nil && v.Running.Progress.Phase == "Pulling"
		}, func() string { return fmt.Sprintf("last view: %+v, last sync %+v", v, v.LastSync) })
		s.kube.Stop()
		t.Log("apiserver stopped mid-pull")
		// The sync does not need the apiserver: it publishes meanwhile.
		eventually(t, "published while the apiserver is down", 2*time.Minute, func() bool {
			p, _ := s.pointer("outage")
			return p.Digest == d2
		})
		_, b := get(t, urls[0])
		if sum(b) == old[urls[0]] {
			t.Fatal("the new catalog is published but not served")
		}
		time.Sleep(2 * time.Second) // status writes fail and are retried
		s.kube.Start()
		back := time.Now()
		st := s.waitServing("outage", d2, 2*time.Minute)
		t.Logf("apiserver back; status caught up in %v: Progressing %s: %s", time.Since(back).Round(time.Millisecond),
			st.cond("Progressing").Reason, st.cond("Progressing").Message)
	})

	t.Run("MinIO hangs mid-publish", func(t *testing.T) {
		// Then MinIO stops answering anything while keeping connections
		// open (a hung store, not a dead one).
		rec := s.recordProgressing("outage")
		d3 := midUpload(t, 52)
		s.s3Proxy.Clear()
		s.s3Proxy.Inject(servers.StallAfter(-1), 0)
		hung := time.Now()
		eventually(t, "Retrying while the store hangs", 60*time.Second, func() bool {
			return s.status("outage").cond("Progressing").Reason == "Retrying"
		})
		t.Logf("Retrying %v after MinIO hung (--s3-stall-timeout 2s): %s", time.Since(hung).Round(time.Millisecond), s.status("outage").cond("Progressing").Message)
		s.s3Proxy.Clear()
		back := time.Now()
		s.waitServing("outage", d3, 2*time.Minute)
		t.Logf("MinIO answering again; published %s %v later", d3, time.Since(back).Round(time.Millisecond))
		logTransitions(t, rec())
	})

	rd.finish()
	t.Logf("readers during the outages: %s", rd)
	if len(rd.broken) > 0 {
		t.Fatalf("%d incomplete answers, e.g. %s", len(rd.broken), rd.broken[0])
	}
	for code, n := range rd.status {
		// While the store is down, a catalog not in the cache cannot be
		// read: a clear 5xx, never a partial 200.
		if code < 500 {
			t.Fatalf("%d answers with HTTP %d", n, code)
		}
	}
	for _, u := range urls {
		if len(rd.bodies[u]) > 4 {
			t.Errorf("%s: %d distinct answers for 4 published catalogs: %v", u, len(rd.bodies[u]), rd.bodies[u])
		}
	}
}

func logTransitions(t *testing.T, trs []transition) {
	t.Helper()
	var lines []string
	for _, tr := range trs {
		lines = append(lines, fmt.Sprintf("  +%v %s: %s", tr.at.Round(time.Millisecond), tr.reason, tr.message))
	}
	t.Logf("Progressing went:\n%s", strings.Join(lines, "\n"))
}
