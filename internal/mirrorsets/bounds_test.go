package mirrorsets

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type lines struct{ strings.Builder }

// TestParseAllBounds: over MaxObjects, the first by name are read, and a
// bad object or the excess is logged once until something changes.
func TestParseAllBounds(t *testing.T) {
	var logs lines
	w := New(nil, nil, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	var objs []any
	for i := MaxObjects + 10; i > 0; i-- { // the store's order is not the names'
		y := fmt.Sprintf(`{metadata: {name: set-%03d, resourceVersion: "1"}, spec: {imageDigestMirrors: [{source: s%d.example.test, mirrors: [m.example.test]}]}}`, i, i)
		if i == 7 {
			y = `{metadata: {name: set-007, resourceVersion: "1"}, spec: {imageDigestMirrors: [{source: s.example.test, mirrors: ["bad mirror"]}]}}`
		}
		objs = append(objs, obj(t, y))
	}
	for range 3 {
		sets := w.parseAll(Digest, objs)
		if len(sets) != MaxObjects-1 || sets[0].Name != "set-001" || sets[len(sets)-1].Name != fmt.Sprintf("set-%03d", MaxObjects) {
			t.Fatalf("%d sets, %s … %s", len(sets), sets[0].Name, sets[len(sets)-1].Name)
		}
	}
	if n := strings.Count(logs.String(), "too many image mirror sets"); n != 1 {
		t.Errorf("the excess was logged %d times:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "image mirror set skipped"); n != 1 {
		t.Errorf("the bad object was logged %d times:\n%s", n, logs.String())
	}
	// An edit of the bad object (a new resourceVersion) is logged again.
	objs[len(objs)-7].(*unstructured.Unstructured).SetResourceVersion("2")
	w.parseAll(Digest, objs)
	if n := strings.Count(logs.String(), "image mirror set skipped"); n != 2 {
		t.Errorf("the edited bad object was logged %d times in all", n)
	}
}
