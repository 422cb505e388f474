package webhook

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
)

// A zot push by digest whose data names no separate digest keeps the
// digest (without it, it would match every tag of the repository).
func TestZotPushByDigest(t *testing.T) {
	ev := event.New()
	ev.SetID("1")
	ev.SetSource("zot")
	ev.SetType("zotregistry.image.updated")
	if err := ev.SetData(event.ApplicationJSON, map[string]string{"name": "acme/cat", "reference": digAMD}); err != nil {
		t.Fatal(err)
	}
	ps, err := zotPush(ev, "zot.example.test:5000")
	if err != nil || len(ps) != 1 || ps[0].Digest != digAMD || ps[0].Tag != "" {
		t.Fatalf("push by digest: %+v %v", ps, err)
	}
}
