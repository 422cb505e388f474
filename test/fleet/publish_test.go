package fleet

import (
	"bytes"
	"io"
	"net/http"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// pushes is how many publishes the publish-to-Serving times are taken
// over.
const pushes = 5

// registryGets counts the registry's GETs of manifests and blobs since the
// last reset, by what they name (a digest or a tag).
func (f *fleet) registryGets() map[string]int {
	gets := map[string]int{}
	for _, r := range f.proxy.Requests() {
		if r.Class == servers.BlobGET || r.Class == servers.ManifestGET {
			gets[r.Class+" "+path.Base(r.Path)]++
		}
	}
	return gets
}

// publishAndWait pushes, publishes once and waits until every cluster
// serves the push; it checks that no manifest or blob was fetched twice
// and that every cluster says the same, and returns how long each
// cluster took to show it after the publish ended (for the numbers, not
// judged).
func (f *fleet) publishAndWait(t *testing.T, seq int) []time.Duration {
	t.Helper()
	digest := f.push(t, seq)
	f.proxy.ResetCounts()
	f.publish(t)
	published := time.Now()
	gets := f.registryGets()
	for what, n := range gets {
		if n != 1 {
			t.Errorf("push %d: %s fetched %d times", seq, what, n)
		}
	}
	if len(gets) == 0 {
		t.Fatalf("push %d: nothing fetched from the registry", seq)
	}
	var took []time.Duration
	var first served
	for i, c := range f.clusters {
		s, at := c.waitServing(t, digest)
		took = append(took, at.Sub(published))
		if i == 0 {
			first = s
		} else if s != first {
			t.Errorf("cluster %d says %+v, cluster 0 %+v", i, s, first)
		}
		if s.base != f.baseURL()+"/catalogs/"+catalogName || s.progressing != "True/Succeeded" {
			t.Errorf("cluster %d: %+v", i, s)
		}
	}
	t.Logf("push %d: %d registry GETs; Serving after %v", seq, len(gets), took)
	return took
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Until a catalog is published the member clusters say so, and each push
// is then fetched from the registry once, published once, and Serving
// with the same resolvedSource in both clusters, told by MinIO's bucket
// notifications alone (the agents' poll is an hour).
func TestFleetFollowsNotifications(t *testing.T) {
	f := startFleet(t, options{clusters: 2, agentsEach: 1, notify: true, pollInterval: time.Hour})
	for _, c := range f.clusters {
		waitState(t, c, served{serving: "False/Unavailable", progressing: "True/Retrying"})
	}
	var all []time.Duration
	for seq := range pushes {
		all = append(all, f.publishAndWait(t, seq)...)
	}
	t.Logf("notifications: publish to Serving, median %v over %d pushes x %d clusters", median(all), pushes, len(f.clusters))
	f.stopAll(t)
	f.readAfterStop(t)
}

// With no notifications, the poll finds each publish.
func TestFleetFollowsByPolling(t *testing.T) {
	const poll = 2 * time.Second
	f := startFleet(t, options{clusters: 2, agentsEach: 1, pollInterval: poll})
	var all []time.Duration
	for seq := range pushes {
		all = append(all, f.publishAndWait(t, seq)...)
	}
	t.Logf("poll every %v: publish to Serving, median %v over %d pushes x %d clusters", poll, median(all), pushes, len(f.clusters))
}

// Five agents on one cluster, then one: the registry sees one fetch of
// each manifest and blob per publish whatever the number of followers.
func TestFleetPullsOncePerPublish(t *testing.T) {
	f := startFleet(t, options{clusters: 1, agentsEach: 5, notify: true, pollInterval: time.Hour})
	f.publishAndWait(t, 0)
	c := f.clusters[0]
	for _, a := range c.agents[1:] {
		a.Stop()
	}
	c.agents = c.agents[:1]
	f.publishAndWait(t, 1)
}

// waitState waits until the cluster's status says want (ref and base
// ignored).
func waitState(t *testing.T, c *cluster, want served) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		s := c.served(t)
		if s.serving == want.serving && s.progressing == want.progressing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s: status %+v, want %+v", c.kube.URL, s, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopAll stops every catalogsync process of the fleet (the sync has
// exited already).
func (f *fleet) stopAll(t *testing.T) {
	t.Helper()
	for _, c := range f.clusters {
		for _, a := range c.agents {
			a.Stop()
			if a.Pid() != 0 {
				t.Fatal("an agent still runs")
			}
		}
	}
}

// readAfterStop reads each cluster's urls.base + /api/v1/all from the
// bucket with a plain HTTP client, as operator-controller does, with no
// catalogsync process running.
func (f *fleet) readAfterStop(t *testing.T) {
	t.Helper()
	for i, c := range f.clusters {
		s := c.served(t)
		resp, err := http.Get(s.base + "/api/v1/all")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jsonl" || !bytes.Contains(b, []byte(`"schema":"olm.package"`)) {
			t.Fatalf("cluster %d: GET %s/api/v1/all with every catalogsync stopped: %d %s, %d bytes", i, s.base, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
	}
}
