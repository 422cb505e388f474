package status

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestParseObjectPollInterval: a ClusterCatalog's pollIntervalMinutes out
// of range is refused, never wrapped round to a short interval.
func TestParseObjectPollInterval(t *testing.T) {
	obj := func(v any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "c"},
			"spec": map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{
				"ref": "registry.invalid/c:v1", "pollIntervalMinutes": v}}},
		}}
	}
	o, err := parseObject(obj(int64(10)))
	if err != nil || o.cat.PollInterval != 10*time.Minute {
		t.Fatalf("10 minutes: %v %v", o.cat.PollInterval, err)
	}
	for _, bad := range []any{int64(307445734562), float64(1e300), int64(-5)} {
		if o, err := parseObject(obj(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%v: accepted as %v", bad, o.cat.PollInterval)
		}
	}
}
