package e2e

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// Scenarios 1 and 2: a ClusterCatalog created before its image exists is
// published by the push's notification alone, its content answers as
// catalogd's would, and a new version replaces it; the old digest's content
// is garbage-collected only after the grace period.
func TestCreatePushServeReplace(t *testing.T) {
	const grace = 4 * time.Second
	s := newStack(t, options{args: []string{"--gc-interval", "1s", "--gc-grace", grace.String(), "--gc-keep", "0"}})
	c := s.replicas[0]

	s.createCatalog("lifecycle", "acme/lifecycle:v1")
	// No image yet: catalogd says Retrying, and so must we, not Serving.
	st := s.waitStatus("lifecycle", "Retrying before the push", 60*time.Second, func(st ccStatus) bool {
		return st.cond("Progressing").Reason == "Retrying"
	})
	if st.cond("Serving").Status == "True" {
		t.Fatalf("Serving before anything was pushed: %+v", st)
	}
	t.Logf("before the push: Progressing %s: %s", st.cond("Progressing").Reason, st.cond("Progressing").Message)

	pushed := time.Now()
	d1 := s.push("acme/lifecycle:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs"))
	st = s.waitServing("lifecycle", d1, 60*time.Second)
	t.Logf("push -> Serving %s in %v", d1, time.Since(pushed).Round(time.Millisecond))
	if want := c.URL + "/catalogs/lifecycle"; st.BaseURL != want {
		t.Errorf("urls.base %q, want %q", st.BaseURL, want)
	}
	if p, ok := s.pointer("lifecycle"); !ok || p.Digest != d1 {
		t.Fatalf("stored pointer %+v, want %s", p, d1)
	}

	// The content answers exactly as catalogd's: /all byte for byte, and
	// every metas query is the matching lines of /all in order.
	want, err := os.ReadFile(filepath.Join(fbcDir("tiny"), "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, all := get(t, st.BaseURL+"/api/v1/all")
	if code != 200 || !bytes.Equal(all, want) {
		t.Fatalf("/all: %d, %d bytes, want the %d bytes of expected_all.json", code, len(all), len(want))
	}
	objs := parseLines(t, want)
	queries := []url.Values{
		{"schema": {"olm.package"}},
		{"schema": {"olm.channel"}},
		{"schema": {"olm.bundle"}},
	}
	for _, o := range objs {
		if o.Schema == "olm.package" {
			queries = append(queries, url.Values{"package": {o.Name}}, url.Values{"schema": {"olm.bundle"}, "package": {o.Name}})
		}
		if o.Schema == "olm.bundle" {
			queries = append(queries, url.Values{"schema": {"olm.bundle"}, "package": {o.Package}, "name": {o.Name}})
		}
	}
	for _, q := range queries {
		code, got := get(t, st.BaseURL+"/api/v1/metas?"+q.Encode())
		if exp := filterLines(objs, q); code != 200 || string(got) != exp {
			t.Errorf("metas?%s: %d\n%s\nwant\n%s", q.Encode(), code, got, exp)
		}
	}
	t.Logf("%d metas queries matched the FBC", len(queries))

	// Scenario 2: a new version on the same tag.
	pushed = time.Now()
	d2 := s.push("acme/lifecycle:v1", imagebuild.FromDir(fbcDir("community-v4.21-3pkgs"), "/configs"))
	s.waitServing("lifecycle", d2, 60*time.Second)
	replaced := time.Now()
	t.Logf("new version -> Serving %s in %v", d2, replaced.Sub(pushed).Round(time.Millisecond))
	code, pkgs := get(t, st.BaseURL+"/api/v1/metas?schema=olm.package")
	var names []string
	for _, o := range parseLines(t, pkgs) {
		names = append(names, o.Name)
	}
	if code != 200 || !slices.Equal(names, []string{"apicurio-registry-3", "aws-neuron-operator", "ecr-secret-operator"}) {
		t.Fatalf("packages after the new version: %d %v", code, names)
	}

	// The old digest stays for the grace period (readers that found it
	// finish), then goes; the new one stays.
	if len(s.contentKeys("lifecycle", d1)) == 0 {
		t.Fatalf("old content deleted right after the swap, before the %v grace period", grace)
	}
	eventually(t, "old content garbage-collected", grace+30*time.Second, func() bool {
		return len(s.contentKeys("lifecycle", d1)) == 0
	})
	// Grace counts from the pointer's swap, a little before the status
	// showed it.
	ptr, _ := s.pointer("lifecycle")
	gone := time.Since(ptr.PublishedAt)
	if gone < grace {
		t.Fatalf("old content deleted %v after the swap, within the %v grace period", gone, grace)
	}
	t.Logf("old digest deleted %v after the swap (grace %v, GC every 1s)", gone.Round(time.Millisecond), grace)
	if len(s.contentKeys("lifecycle", d2)) == 0 {
		t.Fatal("GC deleted the current content")
	}
	if code, _ := get(t, st.BaseURL+"/api/v1/metas?schema=olm.package"); code != 200 {
		t.Fatalf("current catalog no longer served after GC: %d", code)
	}
}

type meta struct {
	Schema  string `json:"schema"`
	Package string `json:"package"`
	Name    string `json:"name"`
	line    string
}

func parseLines(t *testing.T, b []byte) []meta {
	t.Helper()
	var out []meta
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		var m meta
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		m.line = line
		out = append(out, m)
	}
	return out
}

// filterLines is catalogd's metas filter: every given field must match
// the object's own field (an olm.package has no package field, so
// package=X does not return it, as in catalogd).
func filterLines(objs []meta, q url.Values) string {
	var b strings.Builder
	for _, o := range objs {
		if v := q.Get("schema"); v != "" && o.Schema != v {
			continue
		}
		if v := q.Get("package"); v != "" && o.Package != v {
			continue
		}
		if v := q.Get("name"); v != "" && o.Name != v {
			continue
		}
		b.WriteString(o.line)
	}
	return b.String()
}
