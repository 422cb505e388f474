package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
