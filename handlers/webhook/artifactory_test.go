package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

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
