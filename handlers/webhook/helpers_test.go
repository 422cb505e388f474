package webhook

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// fixtureDir holds recorded and hand-written sender requests: <name>.json
// is the exact body, <name>.headers.txt its headers.
const fixtureDir = "../../testdata/webhooks"

// Digests used by the fixtures (synthetic).
const (
	digIndex = "sha256:f90541bc805316eedb14faca1ef7ddf67d452bb889921b27d65c8ab707e20bfc"
	digAMD   = "sha256:65dc7b36d377971c4e9a6ea6d1c7ac4cbd809e43585adeef7f165b351b3eeb14"
	digARM   = "sha256:c8e34eb0b3cc71c84b4038eb2b043fb92e9d64d5a1db5b9a7f168399f4b3fff9"
)

type fixture struct {
	body   []byte
	header http.Header
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	hf, err := os.Open(filepath.Join(fixtureDir, name+".headers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	h := http.Header{}
	sc := bufio.NewScanner(hf)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s.headers.txt: bad line %q", name, line)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fixture{body: body, header: h}
}

func (f fixture) request(path string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(f.body))
	for k, vs := range f.header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return r
}

// trigger is one recorded Trigger call.
type trigger struct{ catalog, reason string }

// recorder is the engine's side in tests: it records triggers.
type recorder struct {
	mu    sync.Mutex
	calls []trigger
}

func (r *recorder) Trigger(_ context.Context, catalog, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, trigger{catalog, reason})
}

func (r *recorder) catalogs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		out = append(out, c.catalog)
	}
	slices.Sort(out)
	return out
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// staticLister returns a fixed catalog list.
type staticLister []catalogspec.Catalog

func (l staticLister) Catalogs() []catalogspec.Catalog { return l }

// testCatalogs: one per sender's registry, plus catalogs that must match
// only some pushes (other tag, pinned digest, other repository, OCI layout).
var testCatalogs = staticLister{
	{Name: "dist", Image: catalogspec.ParseImage("registry.example.com/acme/operator-catalog:v4.16")},
	{Name: "dist-test", Image: catalogspec.ParseImage("registry.example.test/acme/operator-catalog:v4.16")},
	{Name: "dist-test-v1", Image: catalogspec.ParseImage("registry.example.test/acme/operator-catalog:v1")},
	{Name: "pinned", Image: catalogspec.ParseImage("registry.example.test/acme/operator-catalog@" + digAMD)},
	{Name: "other-repo", Image: catalogspec.ParseImage("registry.example.test/acme/other:v4.16")},
	{Name: "layout", Image: catalogspec.ParseImage("ocidir://testdata/acme/operator-catalog:v4.16")},
	{Name: "gitlab", Image: catalogspec.ParseImage("registry.gitlab.example.test/acme/operator-catalog:v4.16")},
	{Name: "harbor", Image: catalogspec.ParseImage("harbor.example.com/acme/operator-catalog:v4.16")},
	{Name: "quay", Image: catalogspec.ParseImage("quay.example.test/acme/operator-catalog:v4.16")},
	{Name: "quay-legacy", Image: catalogspec.ParseImage("quay.example.test:8443/acme/operator-catalog:latest")},
	{Name: "hub", Image: catalogspec.ParseImage("acme/operator-catalog:v4.16")},
	{Name: "ghcr", Image: catalogspec.ParseImage("ghcr.example.test/acme/operator-catalog:v4.16")},
	{Name: "ghcr-labs", Image: catalogspec.ParseImage("ghcr.example.test/acme-labs/operator-catalog:v1")},
	{Name: "zot", Image: catalogspec.ParseImage("zot.example.test:5000/acme/operator-catalog:v4.16")},
	{Name: "acr", Image: catalogspec.ParseImage("acmecatalogs.acr.example.test/acme/operator-catalog:v4.16")},
	{Name: "jfrog-path", Image: catalogspec.ParseImage("artifactory.example.test/docker-local/acme/operator-catalog:v4.16")},
	{Name: "jfrog-sub", Image: catalogspec.ParseImage("docker-local.artifactory.example.test/acme/operator-catalog:v4.16")},
	{Name: "gar", Image: catalogspec.ParseImage("europe-west1-docker.pkg.example.test/acme-prj/catalogs/operator-catalog:v4.16")},
	{Name: "nexus", Image: catalogspec.ParseImage("nexus.example.test:8443/acme/operator-catalog:v4.16")},
	{Name: "nexus-routed", Image: catalogspec.ParseImage("nexus.example.test:8443/docker-hosted/acme/operator-catalog:v4.16")},
	{Name: "ecr", Image: catalogspec.ParseImage("123456789012.dkr.ecr.eu-west-1.example.test/acme/operator-catalog:v4.16")},
}

// testConfig has one receiver per type, with the secrets the fixtures use
// (signed fixtures use hook-test-secret).
var testConfig = Config{
	Receivers: []ReceiverConfig{
		{Name: "dist", Type: TypeDistribution, Secret: "3f6c1d0e9a8b7c6d5e4f"},
		{Name: "gl", Type: TypeGitLab, Secret: "gl-notify-5e0c1b7d2a"},
		{Name: "harbor", Type: TypeHarbor, Secret: "9d8c7b6a5f4e3d2c1b0a"},
		{Name: "quay", Type: TypeQuay, Secret: "quay-path-token"},
		{Name: "hub", Type: TypeDockerHub, Secret: "hub-path-token"},
		{Name: "gh", Type: TypeGitHub, Secret: "hook-test-secret"},
		{Name: "zot", Type: TypeZot, Secret: "Basic em90LWV2ZW50czpvcGVuc2VzYW1l", Host: "zot.example.test:5000"},
		{Name: "acr", Type: TypeACR, Secret: "7e6d5c4b3a2f1e0d9c8b"},
		{Name: "eg", Type: TypeEventGrid, Secret: "eg-delivery-4c3b2a19"},
		{Name: "jfrog", Type: TypeArtifactory, Secret: "hook-test-secret"},
		{Name: "ci", Type: TypeGeneric, Secret: "hook-test-secret", Host: "registry.example.test"},
		{Name: "gar", Type: TypeGAR, Audience: garAudience, JWKS: fixtureDir + "/gar-jwks.json", ServiceAccount: garServiceAccount},
		{Name: "nexus", Type: TypeNexus, Secret: "hook-test-secret", Host: "nexus.example.test:8443"},
		{Name: "ecr", Type: TypeECR, Secret: "ecr-destination-key-8f2d1c", Header: "X-Api-Key", Host: "123456789012.dkr.ecr.eu-west-1.example.test"},
		{Name: "ecr-basic", Type: TypeECR, Secret: "eventbridge:b4s1c-pa55", Host: "123456789012.dkr.ecr.eu-west-1.example.test"},
		{Name: "cd", Type: TypeCDEvents, Secret: "cd-events-5b4a3c2d1e"},
	},
	HostAliases: []HostAlias{{Host: "harbor.example.com", Aliases: []string{"harbor.example.test"}}},
}

func newTestReceiver(t testing.TB, opts ...Option) (*Receiver, *recorder) {
	t.Helper()
	rec := &recorder{}
	rc, err := NewReceiver(testConfig, testCatalogs, rec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rc, rec
}

// pathOf returns the path of the named test receiver.
func pathOf(t testing.TB, rc *Receiver, name string) string {
	t.Helper()
	for _, e := range rc.Endpoints() {
		if e.Name == name {
			return e.Path
		}
	}
	t.Fatalf("no receiver %q", name)
	return ""
}

// eventually polls cond until it holds, failing after a generous bound:
// tests wait on state, never assert on how long something took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsonRequest is a POST of body as application/json with extra headers.
func jsonRequest(body string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/t", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}
