package e2e

import (
	"context"
	"github.com/catalogsync/catalogsync/test/servers"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/load"
)

// Scenario 7: 500 requests/s of mixed metas queries for 30 s
// (CATALOGSYNC_E2E_SOAK=<duration> for longer) while a large catalog
// syncs and publishes on the same process: no errors, no incomplete
// answers. Then a storm of 1,000 signed webhooks in about a second: every
// one acknowledged, at most two syncs.
func TestLoadDuringSyncAndStorm(t *testing.T) {
	soak := 30 * time.Second
	if v := os.Getenv("CATALOGSYNC_E2E_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CATALOGSYNC_E2E_SOAK: %v", err)
		}
		soak = d
	}
	// The 220 MB catalog when the shared data is there, else 40 MB made
	// from the repository's own.
	var big, bigName string
	if _, err := os.Stat(sharedCommunityPath()); err == nil {
		big, bigName = generated(t, sharedCommunityPath(), 16), "220 MB (16× community-v4.21)"
	} else {
		big, bigName = generated(t, fbcDir("community-v4.21-3pkgs"), 200), "40 MB (200× community-v4.21-3pkgs)"
	}
	s := newStack(t, options{})
	c := s.replicas[0]
	s.createCatalog("steady", "acme/steady:v1")
	s.createCatalog("growing", "acme/growing:v1")
	s.waitServing("steady", s.push("acme/steady:v1", imagebuild.FromDir(fbcDir("community-v4.21-3pkgs"), "/configs")), 60*time.Second)
	s.waitServing("growing", s.push("acme/growing:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs")), 60*time.Second)

	q := func(name, query string) string { return c.URL + "/catalogs/" + name + "/api/v1/metas?" + query }
	urls := []string{
		q("steady", "schema=olm.package"),
		q("steady", "package=aws-neuron-operator"),
		q("steady", "schema=olm.bundle&package=ecr-secret-operator"),
		q("steady", "schema=olm.channel"),
		q("steady", "schema=olm.bundle&package=apicurio-registry-3&name=apicurio-registry-3.v3.0.9"),
		q("growing", "schema=olm.package&name=prometheus"),
		q("growing", "package=aws-neuron-operator-copy7"),
		q("growing", "schema=olm.channel&package=ecr-secret-operator-copy3"),
	}
	rd := startReaders(urls, 64, 500)
	time.Sleep(soak / 6)
	pushed := time.Now()
	d := s.push("acme/growing:v1", imagebuild.FromDir(big, "/configs"))
	s.waitServing("growing", d, soak+3*time.Minute)
	synced := time.Since(pushed)
	if rest := time.Until(pushed.Add(soak * 5 / 6)); rest > 0 {
		time.Sleep(rest)
	}
	rd.finish()
	t.Logf("%s synced and published in %v under load", bigName, synced.Round(time.Millisecond))
	t.Logf("load, 500 req/s for %v over %d queries: %s", soak, len(urls), rd)
	if len(rd.broken) > 0 || len(rd.status) > 0 || rd.connErrs > 0 {
		t.Fatalf("errors under load: %d broken (e.g. %v), statuses %v, %d without connection", len(rd.broken), rd.broken[:min(1, len(rd.broken))], rd.status, rd.connErrs)
	}
	// How many requests went out depends on this machine's load, not on
	// the server: only that the load ran at all is required.
	if rd.ok < 1000 {
		t.Fatalf("only %d answers in %v (%d not sent): the load did not run", rd.ok, soak, rd.unsent)
	}

	// The storm: a CI system retrying, 16 senders, the tag moving in the
	// middle.
	storm(t, s, "growing", "acme/growing:v1")
}

func sharedCommunityPath() string {
	// CATALOGSYNC_SHARED names the shared folder where it is not beside
	// the repository (a git worktree elsewhere).
	return servers.SharedDir() + "/testdata/fbc/community-v4.21/configs"
}

func storm(t *testing.T, s *stack, name, repoTag string) {
	t.Helper()
	c := s.replicas[0]
	syncs := func() int { return metric(t, c, "catalogsync_syncs_total", `catalog="`+name+`"`) }
	before := syncs()
	repo, tag, _ := strings.Cut(repoTag, ":")
	body := []byte(`{"repository":"` + repo + `","tag":"` + tag + `"}`)
	var newest string
	res := load.Storm{
		URL:     c.URL + "/hooks/ci",
		Body:    body,
		Header:  http.Header{"Content-Type": {"application/json"}, "X-Signature-256": {webhook.Sign(ciSecret, body)}},
		N:       1000,
		Senders: 16,
		Over:    time.Second,
		Timeout: 10 * time.Second,
		At: map[int]func(){500: func() {
			newest = s.push(repoTag, imagebuild.FromDir(fbcDir("community-v4.21-3pkgs"), "/configs"))
		}},
	}.Run(context.Background())
	if len(res.Failures) > 0 {
		t.Fatalf("%d of 1000 webhooks not acknowledged: %v", len(res.Failures), res.Failures[:min(10, len(res.Failures))])
	}
	s.waitServing(name, newest, 2*time.Minute)
	eventually(t, "the storm's syncs to end", time.Minute, func() bool {
		v := catalogView(t, c.URL, name)
		return v.Running == nil && syncs() > before
	})
	n := syncs() - before
	acks := res.Acks
	t.Logf("storm: 1000 signed webhooks in %v (the tag moved after 500), %d syncs, ack p50 %v p99 %v max %v",
		res.Took.Round(time.Millisecond), n, acks[500].Round(10*time.Microsecond), acks[990].Round(10*time.Microsecond), acks[999].Round(10*time.Microsecond))
	// A queued sync starts at the latest 5 s (the engine's longest settle)
	// after its first trigger: a storm that a busy machine stretches past
	// that may need one more sync per 5 s, by the server's own rule.
	if want := 2 + int(res.Took/(5*time.Second)); n > want {
		t.Fatalf("%d syncs for a storm of %v, want at most %d", n, res.Took.Round(time.Millisecond), want)
	}
}
