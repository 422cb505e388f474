package webhook

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
)

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
