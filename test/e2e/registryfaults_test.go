package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Scenario 5: faults between catalogsync and a real registry, injected by
// a proxy in front of it. Each shows Retrying with a readable message on
// the ClusterCatalog, then Succeeded; the timings are logged for
// docs/reliability.md. Mostly waiting on retries and slow pulls, it runs
// beside the other such scenarios, on a cluster of its own.
func TestRegistryFaults(t *testing.T) {
	t.Parallel()
	s := newStack(t, options{ownKube: true, args: []string{"--stall-timeout", "2s"}})
	s.createCatalog("faulty", "acme/faulty:v1")
	d := s.push("acme/faulty:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs"))
	s.waitServing("faulty", d, 60*time.Second)

	cases := []struct {
		name    string
		inject  func()
		copies  int
		retry   bool   // a Retrying status is expected
		resumed bool   // or the client resumed the blob by itself
		message string // in the Retrying message
		minWait time.Duration
	}{
		{"5xx burst (3× 503 on the manifest HEAD)", func() {
			s.proxy.Inject(servers.Status(503), 3, servers.ManifestHEAD)
		}, 1, true, false, "503", 0},
		{"429 with Retry-After: 3", func() {
			s.proxy.Inject(servers.TooManyRequests(3*time.Second), 1, servers.ManifestHEAD)
		}, 2, true, false, "429", 3 * time.Second},
		{"connection reset after 64 KiB of the layer", func() {
			s.injectLayer(servers.ResetAfter(64 << 10))
		}, 30, true, true, "", 0},
		{"connection reset after 64 KiB on the next 6 blob GETs (config and layer of each attempt)", func() {
			s.proxy.Inject(servers.ResetAfter(64<<10), 6, servers.BlobGET)
		}, 32, true, true, "", 0},
		{"registry stops sending after 64 KiB of the layer (stall timeout 2 s)", func() {
			s.injectLayer(servers.StallAfter(64 << 10))
		}, 33, true, false, "server stalled: no data", 0},
		{"layer served at 100 KB/s", func() {
			s.proxy.Inject(servers.Throttle(100_000), 0, servers.BlobGET)
		}, 60, false, false, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer s.proxy.Clear()
			img := imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), c.copies), "/configs")
			c.inject()
			blobs := s.proxy.Count(servers.BlobGET)
			rec := s.recordProgressing("faulty")
			start := time.Now()
			d := s.push("acme/faulty:v1", img)
			s.waitServing("faulty", d, 2*time.Minute)
			took := time.Since(start)
			trs := rec()
			var firstRetry, pulls time.Duration = -1, 0
			var retryMsg string
			for _, tr := range trs {
				if tr.reason == "Retrying" && firstRetry < 0 {
					firstRetry, retryMsg = tr.at, tr.message
				}
				if strings.HasPrefix(tr.message, "Pulling") {
					pulls++
				}
			}
			var lines []string
			for _, tr := range trs {
				lines = append(lines, fmt.Sprintf("  +%v %s: %s", tr.at.Round(time.Millisecond), tr.reason, tr.message))
			}
			t.Logf("push -> Succeeded in %v; Progressing went:\n%s", took.Round(time.Millisecond), strings.Join(lines, "\n"))
			blobs = s.proxy.Count(servers.BlobGET) - blobs
			switch {
			case c.resumed && firstRetry < 0 && blobs >= 2:
				t.Logf("no Retrying: the registry client resumed the layer itself (%d layer GETs)", blobs)
			case c.retry && firstRetry < 0:
				t.Fatal("never Retrying")
			case c.retry && !strings.Contains(retryMsg, c.message):
				t.Fatalf("Retrying message %q lacks %q", retryMsg, c.message)
			case !c.retry && firstRetry >= 0:
				t.Fatalf("Retrying for a slow but healthy registry: %s", retryMsg)
			case took < c.minWait:
				t.Fatalf("succeeded %v after the push, before the %v the registry asked to wait", took, c.minWait)
			}
			if !c.retry && pulls < 3 {
				t.Errorf("a slow pull showed %d progress messages, want byte progress at least 3 times", pulls)
			}
			if firstRetry >= 0 {
				t.Logf("first Retrying after %v: %s", firstRetry.Round(time.Millisecond), retryMsg)
			}
		})
	}
}
