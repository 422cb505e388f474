package webhook

import (
	"errors"
	"slices"
	"testing"
)

// Harbor CloudEvents deliveries carry an id, so redeliveries are
// deduplicated; the default format has none.
func TestHarborDeliveryIDs(t *testing.T) {
	h := newHarbor(ReceiverConfig{})
	ce := loadFixture(t, "harbor-cloudevents-push")
	want := []string{"/projects/3/webhook/policies/7#4b2f89a6-548d-4c12-9993-a1f5790b97d2"}
	if got := h.DeliveryIDs(ce.request("/hooks/harbor"), ce.body); !slices.Equal(got, want) {
		t.Errorf("CloudEvents: %q, want %q", got, want)
	}
	def := loadFixture(t, "harbor-push-artifact")
	if got := h.DeliveryIDs(def.request("/hooks/harbor"), def.body); len(got) != 0 {
		t.Errorf("default format: %q, want none", got)
	}
}

// A Harbor push names repo_full_name, which wins; namespace/name is a
// fallback only when both are given.
func TestHarborRepository(t *testing.T) {
	h := newHarbor(ReceiverConfig{Host: "harbor.example.test"})
	parse := func(repo string) ([]Push, error) {
		body := `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"v1"}],"repository":` + repo + `}}`
		return h.Parse(jsonRequest(body), []byte(body))
	}
	for repo, want := range map[string]string{
		`{"repo_full_name":"acme/team/cat","namespace":"acme","name":"cat"}`: "acme/team/cat",
		`{"namespace":"acme","name":"cat"}`:                                  "acme/cat",
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
