package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/load"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	stormHooks   = 1000 // notifications per storm
	stormSenders = 16   // concurrent senders
	stormSingles = 10   // lone notifications, the baseline
	stormSecret  = "bench-generic-secret"
)

// BenchmarkWebhookStorm sends 1,000 signed generic webhooks within about a
// second to a running `catalogsync serve` process (its own process, started
// by servers.StartCatalogsync), with the tag moving mid-storm, and reports
// how many syncs ran (coalescing: at most 2) and the acknowledgement
// latencies. The baseline, in the same run and against the same process, is
// the ack latency of a lone webhook sent while nothing else happens.
func BenchmarkWebhookStorm(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	repo := "bench/storm"
	ref := f.registry.Host + "/" + repo + ":v1"
	contents := []imagebuild.Image{testdataImage(b, "tiny"), testdataImage(b, "community-v4.21-3pkgs")}
	first, err := imagebuild.Push(ctx, f.rc, ref, contents[0])
	if err != nil {
		b.Fatal(err)
	}

	dir := b.TempDir()
	cfg := filepath.Join(dir, "catalogsync.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`storage:
  dir: %s
registries:
- name: %s
  plainHTTP: true
catalogs:
- name: storm
  image: %s
webhooks:
  receivers:
  - name: ci
    type: generic
    secret: %s
    host: %s
`, filepath.Join(dir, "store"), f.registry.Host, ref, stormSecret, f.registry.Host)), 0o644); err != nil {
		b.Fatal(err)
	}
	cs := servers.StartCatalogsync(b, []string{"--config", cfg, "--no-docker-config",
		"--poll-check-interval", "1h", "--gc-interval", "0"})
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("how the service's log begins to fail:\n%s", crashHead(cs.Log()))
		}
	})
	api := &serveAPI{b: b, url: cs.URL, catalog: "storm"}
	api.waitPublished(first)
	api.waitIdle()

	body := []byte(fmt.Sprintf(`{"repository":%q,"tag":"v1"}`, repo))
	storm := load.Storm{
		URL:     cs.URL + "/hooks/ci",
		Body:    body,
		Header:  http.Header{"Content-Type": {"application/json"}, "X-Signature-256": {webhook.Sign(stormSecret, body)}},
		N:       stormHooks,
		Senders: stormSenders,
		Over:    time.Second,
	}

	// Baseline: lone webhooks on a warm connection, each once the sync the
	// previous one triggered has finished.
	lone := storm.Client(1)
	var singles []time.Duration
	for range stormSingles {
		// Warm the connection, as a sender's keep-alive one would be.
		if resp, err := lone.Get(cs.URL + "/healthz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		before := api.syncs()
		d, err := storm.Send(ctx, lone)
		if err != nil {
			b.Fatalf("lone webhook: %v", err)
		}
		singles = append(singles, d)
		api.waitSyncsAbove(before)
		api.waitIdle()
	}

	var acks []time.Duration
	var syncs int
	var took time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := api.syncs()
		var newest string
		// Mid-storm the tag moves to the other content.
		storm.At = map[int]func(){stormHooks / 2: func() {
			if newest, err = imagebuild.Push(ctx, f.rc, ref, contents[(i+1)%2]); err != nil {
				b.Fatal(err)
			}
		}}
		res := storm.Run(ctx)
		acks = append(acks, res.Acks...)
		took += res.Took
		if len(res.Failures) > 0 {
			b.Fatalf("%d of %d webhooks not acknowledged: %v", len(res.Failures), stormHooks, res.Failures[:min(5, len(res.Failures))])
		}
		api.waitSyncsAbove(before)
		api.waitIdle()
		api.waitPublished(newest)
		syncs = max(syncs, api.syncs()-before)
	}
	b.StopTimer()
	slices.Sort(acks)
	slices.Sort(singles)
	single := ms(singles[len(singles)/2])
	b.ReportMetric(float64(stormHooks), "webhooks")
	b.ReportMetric(took.Seconds()/float64(b.N), "storm-s")
	b.ReportMetric(float64(syncs), "max-syncs")
	b.ReportMetric(ms(percentile(acks, 50)), "ack-p50-ms")
	b.ReportMetric(ms(percentile(acks, 99)), "ack-p99-ms")
	b.ReportMetric(ms(acks[len(acks)-1]), "ack-max-ms")
	b.ReportMetric(single, "single-ack-ms")
	b.ReportMetric(ms(percentile(acks, 50))/single, "p50-x-single")
	b.ReportMetric(ms(percentile(acks, 99))/single, "p99-x-single")
	if syncs > 2 {
		b.Errorf("%d syncs ran for one storm, want at most 2", syncs)
	}
}

// crashHead returns the lines around the first sign of a crash in a log
// (the tail alone is a goroutine dump).
func crashHead(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "SIG") {
			return strings.Join(lines[max(0, i-10):min(len(lines), i+30)], "\n")
		}
	}
	return "(no panic, fatal error or signal in the log)"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func testdataImage(b *testing.B, set string) imagebuild.Image {
	dir, err := filepath.Abs("../testdata/fbc/" + set + "/configs")
	if err != nil {
		b.Fatal(err)
	}
	return imagebuild.FromDir(dir, "/configs")
}

// serveAPI reads one catalog's state from a serve process's REST API and
// metrics.
type serveAPI struct {
	b       *testing.B
	url     string
	catalog string
}

func (a *serveAPI) get(path string, v any) []byte {
	a.b.Helper()
	resp, err := http.Get(a.url + path)
	if err != nil {
		a.b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			a.b.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return body
}

type catalogView struct {
	Running   *struct{} `json:"running"`
	Queued    *struct{} `json:"queued"`
	Published *struct {
		Digest string `json:"digest"`
	} `json:"published"`
}

func (a *serveAPI) view() catalogView {
	var v catalogView
	a.get("/api/v1/catalogs/"+a.catalog, &v)
	return v
}

// syncs sums catalogsync_syncs_total over its labels.
func (a *serveAPI) syncs() int {
	n := 0
	for _, line := range strings.Split(string(a.get("/metrics", nil)), "\n") {
		if strings.HasPrefix(line, "catalogsync_syncs_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

func (a *serveAPI) eventually(what string, cond func() bool) {
	a.b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			a.b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *serveAPI) waitPublished(digest string) {
	a.b.Helper()
	a.eventually("digest "+digest+" published", func() bool {
		v := a.view()
		return v.Published != nil && v.Published.Digest == digest
	})
}

func (a *serveAPI) waitSyncsAbove(n int) {
	a.b.Helper()
	a.eventually("a sync to finish", func() bool { return a.syncs() > n })
}

// waitIdle waits until no sync has been running or queued for 600 ms (a
// queued sync settles for half a second before it starts).
func (a *serveAPI) waitIdle() {
	a.b.Helper()
	var since time.Time
	a.eventually("the catalog to be idle", func() bool {
		v := a.view()
		if v.Running != nil || v.Queued != nil {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 600*time.Millisecond
	})
}
