package webhook

// Tests written for the mutants gremlins found alive (docs/testing.md).

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// An ACR push is deduplicated by its event id; a body that does not parse,
// or names no id, gives none (and so is never dropped as a duplicate).
func TestACRDeliveryIDs(t *testing.T) {
	body, err := os.ReadFile("../../testdata/webhooks/acr-push.json")
	if err != nil {
		t.Fatal(err)
	}
	a := &acr{}
	if got := a.DeliveryIDs(nil, body); !slices.Equal(got, []string{"cb8c3971-9adc-488b-bdd8-43cbb4974ff5"}) {
		t.Errorf("push: %q", got)
	}
	for _, b := range []string{`{`, `{"action":"push"}`, `{"id":""}`} {
		if got := a.DeliveryIDs(nil, []byte(b)); len(got) != 0 {
			t.Errorf("%s: %q", b, got)
		}
	}
}

// Artifactory: a body missing one of domain and event_type, or a push
// without data or its repo_key, is malformed; a sha256 that is not 32
// bytes of hex is no digest.
func TestArtifactoryParseEdges(t *testing.T) {
	a := newArtifactory(ReceiverConfig{Host: "jfrog.example.test"})
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hooks/artifactory", nil)
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, b := range []string{
		`{"domain":"docker"}`,
		`{"event_type":"pushed"}`,
		`{"domain":"docker","event_type":"pushed"}`,
		`{"domain":"docker","event_type":"pushed","data":{"image_name":"cat","tag":"v1"}}`,
		`{"domain":"docker","event_type":"pushed","data":{"repo_key":"docker-local","tag":"v1"}}`,
	} {
		if _, err := a.Parse(req(), []byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", b, err)
		}
	}
	ps, err := a.Parse(req(), []byte(`{"domain":"docker","event_type":"pushed","data":{"repo_key":"docker-local","image_name":"cat","tag":"v1","sha256":"abcd"}}`))
	if err != nil || len(ps) == 0 {
		t.Fatalf("short sha256: %+v %v", ps, err)
	}
	for _, p := range ps {
		if p.Digest != "" || p.Tag != "v1" {
			t.Errorf("short sha256: %+v", p)
		}
	}
}

// CDEvents: an ignored event in a batch does not stop the ones after it.
func TestCDEventsBatchGoesOn(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../testdata/webhooks/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	body := "[" + read("cdevents-artifact-published-npm") + "," + read("cdevents-artifact-published") + "]"
	r := httptest.NewRequest(http.MethodPost, "/hooks/cdevents", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/cloudevents-batch+json")
	ps, err := newCDEvents(ReceiverConfig{}).Parse(r, []byte(body))
	if err != nil || len(ps) != 1 {
		t.Fatalf("batch of an npm and an OCI artifact: %+v %v, want one push", ps, err)
	}
}

// A package URL whose name or version does not unescape is malformed,
// each on its own.
func TestPurlBadEscapes(t *testing.T) {
	for _, purl := range []string{"pkg:oci/cat%zz@sha256%3Aab", "pkg:oci/cat@sha256%zz", "pkg:oci/@sha256%3Aab"} {
		if _, err := purlPush(purl, "registry.example.test"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", purl, err)
		}
	}
}

// repository_url must be host/repository, with or without a scheme.
func TestPurlRepositoryURL(t *testing.T) {
	const base = "pkg:oci/cat@sha256%3Aab?repository_url="
	p, err := purlPush(base+"://registry.example.test/acme/cat", "")
	if err != nil || p.Host != "registry.example.test" || p.Repository != "acme/cat" {
		t.Errorf("scheme-less ://: %+v %v", p, err)
	}
	for _, ru := range []string{"registry.example.test", "registry.example.test/", "/acme/cat", "https://registry.example.test"} {
		if _, err := purlPush(base+ru, ""); !errors.Is(err, ErrMalformed) {
			t.Errorf("repository_url %q: %v, want malformed", ru, err)
		}
	}
}

// In a CloudEvents batch an ignored event (a deletion) does not stop the
// pushes after it; a request that is no CloudEvent names its content type.
func TestCloudEventsBatchAndContentType(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../testdata/webhooks/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	body := "[" + read("harbor-cloudevents-deleted") + "," + read("harbor-cloudevents-push") + "]"
	h := http.Header{"Content-Type": {"application/cloudevents-batch+json"}}
	ps, err := parseCloudEventsRequest(h, []byte(body), ceOptions{harbor: true})
	if err != nil || len(ps) == 0 {
		t.Fatalf("a deletion then a push: %+v %v", ps, err)
	}
	for ct, want := range map[string]string{"": `"none"`, "text/plain": `"text/plain"`} {
		h := http.Header{}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		if _, err := ParseCloudEvents(h, []byte("{}")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("content type %q: %v, want it named %s", ct, err, want)
		}
	}
}

// hostOfURL takes the host of an absolute http(s) URL with a valid host.
func TestHostOfURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://Registry.Example.Test:5000/x": "registry.example.test:5000",
		"http://registry.example.test":         "registry.example.test",
		"ftp://registry.example.test":          "",
		"https://bad_host!/x":                  "",
		"registry.example.test/acme":           "",
		"%zz":                                  "",
	} {
		if got := hostOfURL(in); got != want {
			t.Errorf("hostOfURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// An empty id in a batch does not stop the ids after it being recorded.
func TestDedupeEmptyIDFirst(t *testing.T) {
	d := NewDedupe(16, time.Hour)
	d.Seen("", "x")
	if !d.Seen("x") {
		t.Fatal("x, after an empty id in its batch, was not recorded")
	}
}

// ECR through EventBridge authenticates with the key itself, "Basic" of
// it or "Bearer" it; anything else (a short header too) is refused.
func TestECRAuthForms(t *testing.T) {
	e := newECR(ReceiverConfig{Header: "X-Api-Key"})
	const secret = "ecr-key-1"
	for v, ok := range map[string]bool{
		secret: true,
		"Basic " + base64.StdEncoding.EncodeToString([]byte(secret)): true,
		"bearer " + secret: true,
		"Basic " + base64.StdEncoding.EncodeToString([]byte("other")): false,
		"Basic !!!!":   false,
		"Bearer other": false,
		"Basic ":       false,
		"abc":          false,
		"Bearer":       false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/ecr", nil)
		r.Header.Set("X-Api-Key", v)
		if err := e.Authenticate(r, nil, secret); (err == nil) != ok {
			t.Errorf("%q: %v, want accepted %v", v, err, ok)
		}
	}
	body, err := os.ReadFile("../../testdata/webhooks/ecr-delete.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.DeliveryIDs(nil, body); !slices.Equal(got, []string{"33cde686-328b-6117-af20-0e5566167484"}) {
		t.Errorf("delivery ids %q", got)
	}
	if got := e.DeliveryIDs(nil, []byte(`{"id":""}`)); len(got) != 0 {
		t.Errorf("empty id: %q", got)
	}
}

// Distribution: blobs (by media type or by URL) are skipped without
// ending the batch.
func TestDistributionBlobsSkipped(t *testing.T) {
	d := newDistribution(ReceiverConfig{})
	body := `{"events":[
{"id":"1","action":"push","target":{"mediaType":"application/octet-stream","repository":"acme/cat","url":"https://registry.example.test/v2/acme/cat/manifests/x"},"request":{"host":"registry.example.test"}},
{"id":"2","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/cat","url":"https://registry.example.test/v2/acme/cat/blobs/sha256:ab"},"request":{"host":"registry.example.test"}},
{"id":"3","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/cat","tag":"v1","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","url":"https://registry.example.test/v2/acme/cat/manifests/v1"},"request":{"host":"registry.example.test"}}]}`
	r := httptest.NewRequest(http.MethodPost, "/hooks/distribution", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
	ps, err := d.Parse(r, []byte(body))
	if err != nil || len(ps) != 1 || ps[0].Tag != "v1" {
		t.Fatalf("two blobs then a manifest: %+v %v", ps, err)
	}
}

// Docker Hub: repo_name wins; without it, namespace/name, only when both
// are given.
func TestDockerHubRepository(t *testing.T) {
	d := newDockerHub(ReceiverConfig{})
	parse := func(repo string) ([]Push, error) {
		body := `{"push_data":{"tag":"v1"},"repository":` + repo + `}`
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return d.Parse(r, []byte(body))
	}
	for repo, want := range map[string]string{
		`{"repo_name":"acme/cat","namespace":"other","name":"x"}`: "acme/cat",
		`{"namespace":"acme","name":"cat"}`:                       "acme/cat",
	} {
		if ps, err := parse(repo); err != nil || len(ps) != 1 || ps[0].Repository != want {
			t.Errorf("%s: %+v %v, want %s", repo, ps, err, want)
		}
	}
	for _, repo := range []string{`{"namespace":"acme"}`, `{"name":"cat"}`, `{}`} {
		if _, err := parse(repo); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", repo, err)
		}
	}
}

// Pub/Sub push ids come as messageId or message_id (messageId wins),
// unique per subscription.
func TestGARDeliveryIDs(t *testing.T) {
	g := &gar{}
	for body, want := range map[string][]string{
		`{"message":{"messageId":"a","message_id":"b"},"subscription":"s"}`: {"s#a"},
		`{"message":{"message_id":"b"},"subscription":"s"}`:                 {"s#b"},
		// Without an id a push has no delivery id, so it is not taken for
		// a redelivery of another id-less push.
		`{"message":{"data":""},"subscription":"s"}`: nil,
		`{"subscription":"s"}`:                       nil,
		`not json`:                                   nil,
	} {
		if got := g.DeliveryIDs(nil, []byte(body)); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// A GitLab rename that names only the new last element is placed beside
// the old path: from "from", else from the event's repository.
func TestGitLabRenameShortForm(t *testing.T) {
	ev := func(repo, from, to string) distributionEvent {
		var e distributionEvent
		e.Action = "rename"
		e.Target.Repository = repo
		e.Target.Rename = &struct {
			Type string `json:"type"`
			From string `json:"from"`
			To   string `json:"to"`
		}{Type: "repository", From: from, To: to}
		return e
	}
	for _, tc := range []struct {
		e    distributionEvent
		want string
	}{
		{ev("group/sub/old", "", "new"), "group/sub/new"},
		{ev("ignored/x", "group/old", "new"), "group/new"},
		{ev("group/old", "", "other/new"), "other/new"},
	} {
		p, err := renamed(tc.e)
		if err != nil || p.Repository != tc.want {
			t.Errorf("%+v: %+v %v, want %s", tc.e.Target.Rename, p, err, tc.want)
		}
	}
}

// Artifact Registry names: a digest name and a tag name of one image give
// one push with both; names of two images, or not registry names, are
// malformed.
func TestGARPush(t *testing.T) {
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	ps, err := garPush("europe-docker.pkg.example.test/p/r/cat@"+d, "europe-docker.pkg.example.test/p/r/cat:v1")
	if err != nil || len(ps) != 1 || ps[0].Digest != d || ps[0].Tag != "v1" || ps[0].Repository != "p/r/cat" {
		t.Fatalf("digest and tag: %+v %v", ps, err)
	}
	ps, err = garPush("europe-docker.pkg.example.test/p/r/cat@"+d, "")
	if err != nil || len(ps) != 1 || ps[0].Digest != d || ps[0].Tag != "" {
		t.Fatalf("digest only: %+v %v", ps, err)
	}
	for _, names := range [][2]string{
		{"europe-docker.pkg.example.test/p/r/cat@" + d, "europe-docker.pkg.example.test/p/r/other:v1"},
		{"ocidir://cat", ""},
		{"", "Not A Name"},
	} {
		if _, err := garPush(names[0], names[1]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want malformed", names, err)
		}
	}
}
