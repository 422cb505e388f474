package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// shippedLimit is the pod's memory limit in deploy/ (GOMEMLIMIT 230MiB).
const shippedLimit = 256 << 20

// graphqlAttack is one hostile query and the refusal it must get.
type graphqlAttack struct {
	name, query, refusal string
}

func nested(depth int, open, leaf, closing string) string {
	return strings.Repeat(open, depth) + leaf + strings.Repeat(closing, depth)
}

// bundleAliases selects every field of limit bundles under n aliases.
func bundleAliases(n, limit int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: olmbundles(limit: %d) { name package image properties { type value } relatedImages { name image } }", i, limit)
	}
	b.WriteString(" }")
	return b.String()
}

// fragmentAliases spreads a fragment of 45 aliases five times: 225
// aliases once expanded.
func fragmentAliases() string {
	var b strings.Builder
	b.WriteString("{ olmbundles(limit: 100) { ...F ...F ...F ...F ...F } } fragment F on OlmBundle {")
	for i := range 45 {
		fmt.Fprintf(&b, " x%d: properties { value }", i)
	}
	b.WriteString(" }")
	return b.String()
}

func graphqlAttacks() []graphqlAttack {
	return []graphqlAttack{
		{"list-value-nested-1000", "{ olmpackages(limit: " + nested(1000, "[", "1", "]") + ") { name } }", "maximum nesting"},
		{"list-value-nested-2000-name", `{ olmpackages(name: ` + nested(2000, "[", `"a"`, "]") + `) { name } }`, "maximum nesting"},
		{"object-value-nested-1000", "{ olmpackages(limit: " + nested(1000, "{a: ", "1", "}") + ") { name } }", "maximum nesting"},
		{"aliases-through-fragments", fragmentAliases(), "maximum alias count"},
		{"answer-50-aliases-of-100-bundles", bundleAliases(50, 100), "one query may have"},
		{"fragment-cycle", "{ olmbundles { ...A } } fragment A on OlmBundle { name ...B } fragment B on OlmBundle { image ...A }", "within itself"},
	}
}

// graphqlServer is a serve process with community-v4.21 published, under
// the shipped GOMEMLIMIT.
type graphqlServer struct {
	cs        *servers.Catalogsync
	pid       int
	startTick string
	client    *http.Client
}

func startGraphQLServer(t *testing.T) *graphqlServer {
	t.Helper()
	dir := filepath.Join(servers.SharedDir(), "testdata", "fbc", "community-v4.21", "configs")
	if _, err := os.Stat(dir); servers.SharedDir() == "" || err != nil {
		t.Skip("needs ../shared/testdata/fbc/community-v4.21, which a user's clone lacks")
	}
	base := t.TempDir()
	ref := "ocidir://" + filepath.Join(base, "oci") + ":v1"
	if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(), ref, imagebuild.FromDir(dir, "/configs")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "catalogsync.yaml")
	writeFile(t, cfg, fmt.Sprintf("storage:\n  dir: %s\ncatalogs:\n- name: community\n  image: %s\n", filepath.Join(base, "store"), ref))
	s := &graphqlServer{client: &http.Client{Timeout: 30 * time.Second}}
	s.cs = servers.StartCatalogsync(t, []string{"--config", cfg, "--tmp-dir", t.TempDir(), "--no-docker-config", "--gc-interval", "0"}, "GOMEMLIMIT=230MiB")
	eventually(t, "community published", 2*time.Minute, func() bool {
		resp, err := s.client.Get(s.cs.URL + "/catalogs/community/api/v1/metas?schema=olm.package&name=etcd")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if s.pid = findPid(s.cs.Addr); s.pid != 0 {
		var err error
		if s.startTick, err = procStart(s.pid); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// query posts a query and returns the status and the GraphQL errors.
func (s *graphqlServer) query(t *testing.T, q string) (int, []string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": q})
	resp, err := s.client.Post(s.cs.URL+"/catalogs/community/api/v1/graphql", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("POST graphql: %v; serve's log: %s", err, crashIn(s.cs.Log()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v; serve's log: %s", err, crashIn(s.cs.Log()))
	}
	var res struct {
		Errors []struct{ Message string }
	}
	if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &res) != nil {
		t.Fatalf("answer is not JSON: %.300s", b)
	}
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Message)
	}
	return resp.StatusCode, msgs
}

// alive checks that the first process still runs and answers.
func (s *graphqlServer) alive(t *testing.T) {
	t.Helper()
	if s.pid != 0 {
		if st, err := procStart(s.pid); err != nil || st != s.startTick {
			t.Fatalf("serve process %d gone or restarted (%v); log: %s", s.pid, err, crashIn(s.cs.Log()))
		}
	}
	if c := crashIn(s.cs.Log()); c != "" {
		t.Fatalf("serve log shows a crash: %s", c)
	}
	if code, msgs := s.query(t, "{ olmpackages(name: \"etcd\") { name } }"); code != http.StatusOK || len(msgs) > 0 {
		t.Fatalf("a plain query after the attack: %d %v", code, msgs)
	}
}

func crashIn(log string) string {
	loc := crashMarks.FindStringIndex(log)
	if loc == nil {
		return ""
	}
	return "\n" + log[max(0, loc[0]-500):min(len(log), loc[0]+2000)]
}

// usage reports the CPU seconds serve used and its peak RSS since
// reset, for the log (never asserted on time).
func (s *graphqlServer) usage() (cpu float64, peak int64) {
	if s.pid == 0 {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	e := env{pid: s.pid}
	return (ut + st) / 100, e.peakRSS()
}

// TestGraphQLAttacks sends the GraphQL attacks to a serve process (under
// the shipped GOMEMLIMIT, with community-v4.21 published): a fragment
// cycle, values nested a thousand deep, aliases hidden in fragments, a
// small query with a huge answer, and those answers sent at once. Each
// must be refused with a clear GraphQL error, the process alive, its
// peak RSS under the shipped pod limit.
func TestGraphQLAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts catalogsync serve")
	}
	s := startGraphQLServer(t)
	e := env{pid: s.pid}
	for _, a := range graphqlAttacks() {
		t.Run(a.name, func(t *testing.T) {
			e.resetPeak()
			cpu0, _ := s.usage()
			code, msgs := s.query(t, a.query)
			cpu1, peak := s.usage()
			t.Logf("%d bytes: %d %.200q; serve used %.2f s CPU, peak RSS %s", len(a.query), code, msgs, cpu1-cpu0, mib(peak))
			if code != http.StatusOK || len(msgs) != 1 || !strings.Contains(msgs[0], a.refusal) {
				t.Errorf("got %d %q, want a GraphQL error saying %q", code, msgs, a.refusal)
			}
			s.alive(t)
		})
	}
	t.Run("concurrent-large-answers", func(t *testing.T) {
		e.resetPeak()
		heavy := bundleAliases(50, 100)
		var wg sync.WaitGroup
		codes := make([]int, 16)
		for i := range codes {
			q := heavy
			if i%2 == 1 {
				// Accepted: one full page of bundles, somewhere in the catalog.
				q = strings.Replace(bundleAliases(1, 100), "limit: 100", fmt.Sprintf("limit: 100, offset: %d", i*300), 1)
			}
			wg.Go(func() { codes[i], _ = s.query(t, q) })
		}
		wg.Wait()
		_, peak := s.usage()
		t.Logf("statuses %v; peak RSS %s", codes, mib(peak))
		for i, c := range codes {
			if c != http.StatusOK && c != http.StatusServiceUnavailable {
				t.Errorf("query %d: status %d", i, c)
			}
		}
		if peak > shippedLimit {
			t.Errorf("peak RSS %s, over the shipped limit of %s", mib(peak), mib(shippedLimit))
		}
		s.alive(t)
	})
}
