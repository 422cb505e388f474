package webhook

import (
	"os"
	"slices"
	"testing"
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
