package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
)

// ceWith is a CloudEvent of type typ whose data is raw bytes (none when
// raw is nil).
func ceWith(t *testing.T, typ string, raw []byte) event.Event {
	t.Helper()
	ev := event.New()
	ev.SetID("1")
	ev.SetSource("test")
	ev.SetType(typ)
	if raw != nil {
		if err := ev.SetData(event.ApplicationJSON, raw); err != nil {
			t.Fatal(err)
		}
	}
	return ev
}

// Events that announce no push are ignored, and events whose data cannot
// be read are malformed, whichever way they arrive: a push is never made
// up from a half-read event.
func TestCloudEventRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		ev   event.Event
		want error
	}{
		{"unknown type", ceWith(t, "com.example.other", []byte(`{}`)), ErrIgnored},
		{"harbor without data", ceWith(t, HarborArtifactPushed, nil), ErrMalformed},
		{"harbor data not JSON", ceWith(t, HarborArtifactPushed, []byte(`{"repository":`)), ErrMalformed},
		{"acr data not JSON", ceWith(t, ACRImagePushed, []byte(`[1,`)), ErrMalformed},
		{"acr delete", ceWith(t, ACRImagePushed, []byte(`{"action":"delete","target":{"repository":"acme/cat","tag":"v1"}}`)), ErrIgnored},
	} {
		ps, err := PushesFromCloudEvent(c.ev)
		if !errors.Is(err, c.want) || len(ps) != 0 {
			t.Errorf("%s: %+v, %v; want %v", c.name, ps, err, c.want)
		}
	}
	// The same event with readable data is a push: the refusals above
	// come from the data, not from the type.
	good := ceWith(t, HarborArtifactPushed, []byte(`{"resources":[{"tag":"v1","resource_url":"harbor.example.test/acme/cat:v1"}],"repository":{"repo_full_name":"acme/cat"}}`))
	if ps, err := PushesFromCloudEvent(good); err != nil || len(ps) != 1 || ps[0].Repository != "acme/cat" || ps[0].Tag != "v1" {
		t.Errorf("harbor push: %+v, %v", ps, err)
	}
	if _, err := acrPush(acrEvent{Action: "delete"}); !errors.Is(err, ErrIgnored) {
		t.Errorf("acrPush of a delete: %v", err)
	}
	for typ, want := range map[string]bool{
		HarborArtifactPushed: true, ZotImageUpdated: true, ACRImagePushed: true,
		"harbor.artifact.deleted": false, "": false,
	} {
		if IsPushEventType(typ) != want {
			t.Errorf("IsPushEventType(%q) = %v", typ, !want)
		}
	}
}

// A batch that is not a JSON array of events is malformed.
func TestParseCloudEventsBadBatch(t *testing.T) {
	h := http.Header{"Content-Type": {"application/cloudevents-batch+json"}}
	for _, body := range []string{`{"specversion":"1.0"}`, `[{"specversion":"1.0",`} {
		if evs, err := ParseCloudEvents(h, []byte(body)); !errors.Is(err, ErrMalformed) || len(evs) != 0 {
			t.Errorf("batch %s: %d events, %v", body, len(evs), err)
		}
	}
}

// CDEvents: data that cannot be read and package URLs whose qualifiers
// cannot be parsed are malformed.
func TestCDEventsRefusals(t *testing.T) {
	c := &cdEvents{host: "registry.example.test"}
	typ := CDEventsArtifactPublished + "0.2.0"
	if _, err := c.pushes(ceWith(t, typ, []byte(`{"subject":`))); !errors.Is(err, ErrMalformed) {
		t.Errorf("unreadable data: %v", err)
	}
	if _, err := purlPush("pkg:oci/cat@sha256:"+strings.Repeat("a", 64)+"?repository_url=%zz", "h"); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad qualifiers: %v", err)
	}
}

// Every factory builds the sender of its own type.
func TestSenderTypesMatchFactories(t *testing.T) {
	for typ, build := range senderFactories {
		if got := build(ReceiverConfig{Type: typ}).Type(); got != typ {
			t.Errorf("factory %q builds a sender of type %q", typ, got)
		}
	}
}
