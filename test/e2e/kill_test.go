package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Scenario 4: catalogsync is killed with SIGKILL in the middle of syncing
// the 220 MB catalog. Readers query it the whole time. After a restart the
// next trigger publishes; no reader ever saw anything but the whole old or
// the whole new catalog.
func TestKillMidSync(t *testing.T) {
	big := generated(t, sharedCommunity(t), 16)
	s := newStack(t, options{})
	c := s.replicas[0]
	s.createCatalog("big", "acme/big:v1")
	d0 := s.push("acme/big:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs"))
	s.waitServing("big", d0, 60*time.Second)

	base := c.URL + "/catalogs/big/api/v1"
	urls := []string{base + "/metas?schema=olm.package", base + "/metas?schema=olm.channel&package=prometheus", base + "/all"}
	old := map[string]string{}
	for _, u := range urls {
		_, b := get(t, u)
		old[u] = sum(b)
	}
	rd := startReaders(urls[:2], 4, 0)
	defer rd.finish()

	// Slow the blob a little so the kill lands mid-pull on any machine.
	s.injectLayer(servers.Throttle(8 << 20))
	d1 := s.push("acme/big:v1", imagebuild.FromDir(big, "/configs"))
	var phase string
	var done int64
	eventually(t, "the big sync to be under way", 60*time.Second, func() bool {
		v := catalogView(t, c.URL, "big")
		if v.Running == nil {
			return false
		}
		phase, done = v.Running.Progress.Phase, v.Running.Progress.BytesDone
		return phase == "Pulling" && done > 4<<20 || phase == "Validating" || phase == "Indexing"
	})
	c.Kill()
	killed := time.Now()
	t.Logf("killed -9 while %s (%d MB of the layer read)", phase, done>>20)
	if p, _ := s.pointer("big"); p.Digest != d0 {
		t.Fatalf("pointer moved to %s by a killed sync", p.Digest)
	}
	if keys := s.contentKeys("big", d1); len(keys) > 0 {
		t.Logf("left behind by the killed sync: %v", keys)
	}

	c.Start()
	t.Logf("restarted in %v", time.Since(killed).Round(time.Millisecond))
	// The next trigger: the same image pushed again (CI retrying) sends
	// the notification again.
	restarted := time.Now()
	if v := catalogView(t, c.URL, "big"); v.Running == nil && v.Published.Digest != d1 {
		s.push("acme/big:v1", imagebuild.FromDir(big, "/configs"))
	}
	s.waitServing("big", d1, 3*time.Minute)
	t.Logf("published %s %v after the restart", d1, time.Since(restarted).Round(time.Millisecond))
	// Readers see the new catalog too.
	now := map[string]string{}
	eventually(t, "readers to get the new catalog", time.Minute, func() bool {
		for _, u := range urls[:2] {
			_, b := get(t, u)
			if now[u] = sum(b); now[u] == old[u] || !rd.saw(u, now[u]) {
				return false
			}
		}
		return true
	}, func() string {
		rd.mu.Lock()
		defer rd.mu.Unlock()
		return fmt.Sprintf("readers got %v", rd.bodies)
	})
	rd.finish()

	t.Logf("readers: %s", rd)
	if len(rd.broken) > 0 {
		t.Fatalf("%d incomplete answers, e.g. %s", len(rd.broken), rd.broken[0])
	}
	if len(rd.status) > 0 {
		t.Fatalf("answers other than 200: %v", rd.status)
	}
	for _, u := range urls[:2] {
		if bad := rd.unexpected(u, old[u], now[u]); len(bad) > 0 {
			t.Fatalf("%s: answers that are neither the old nor the new catalog: %v", u, bad)
		}
		t.Logf("%s: answers by body hash %v (old %s, new %s)", u, rd.bodies[u], old[u], now[u])
		if len(rd.bodies[u]) < 2 {
			t.Errorf("%s: readers saw %d distinct answers, want the old and the new", u, len(rd.bodies[u]))
		}
	}
	if _, b := get(t, urls[2]); sum(b) == old[urls[2]] || jsonLines(b) != nil {
		t.Fatal("/all is not the new, complete catalog")
	}
}
