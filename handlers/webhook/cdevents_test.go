package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

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
