package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/catalogsync/catalogsync/internal/cehttp"
)

// CloudEvent types sent by registries.
const (
	HarborArtifactPushed = "harbor.artifact.pushed"
	ZotImageUpdated      = "zotregistry.image.updated"
	ACRImagePushed       = "Microsoft.ContainerRegistry.ImagePushed"
)

// ParseCloudEvents reads the CloudEvents of a request in any HTTP content
// mode: binary (ce-* headers), structured (application/cloudevents+json)
// or batched (application/cloudevents-batch+json). Every event is
// validated. Errors wrap ErrUnsupportedMediaType or ErrMalformed.
func ParseCloudEvents(h http.Header, body []byte) ([]event.Event, error) {
	msg := cehttp.NewMessage(h, bytes.NewReader(body))
	var evs []event.Event
	switch msg.ReadEncoding() {
	case binding.EncodingBatch:
		batch, err := binding.ToEvents(context.Background(), msg, bytes.NewReader(body))
		if err != nil {
			return nil, malformed("invalid CloudEvents batch: %v", err)
		}
		evs = batch
	case binding.EncodingBinary, binding.EncodingStructured:
		ev, err := binding.ToEvent(context.Background(), msg)
		if err != nil {
			return nil, malformed("invalid CloudEvent: %v", err)
		}
		evs = []event.Event{*ev}
	default:
		ct := h.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		return nil, fmt.Errorf("%w %q: want a CloudEvent: binary mode (ce-specversion header), %s or %s",
			ErrUnsupportedMediaType, ct, event.ApplicationCloudEventsJSON, event.ApplicationCloudEventsBatchJSON)
	}
	for i, ev := range evs {
		if err := ev.Validate(); err != nil {
			return nil, malformed("CloudEvent %d: %v", i, err)
		}
	}
	return evs, nil
}

// cloudEventIDs returns the ids of a request's events for redelivery
// checks, qualified by source as CloudEvents ids are unique per source.
func cloudEventIDs(h http.Header, body []byte) []string {
	evs, err := ParseCloudEvents(h, body)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(evs))
	for _, ev := range evs {
		ids = append(ids, ev.Source()+"#"+ev.ID())
	}
	return ids
}

// ceOptions says which registry event families a request may carry.
type ceOptions struct {
	harbor, zot, acr bool
	// anyZotPrefix accepts "<prefix>.image.updated": zot's type prefix is
	// configurable, and a zot receiver knows who sends.
	anyZotPrefix bool
	// defaultHost is used when an event names no registry host.
	defaultHost string
}

// parseCloudEventsRequest reads a request's registry CloudEvents.
func parseCloudEventsRequest(h http.Header, body []byte, o ceOptions) ([]Push, error) {
	evs, err := ParseCloudEvents(h, body)
	if err != nil {
		return nil, err
	}
	var pushes []Push
	var reasons []string
	for _, ev := range evs {
		ps, err := pushesFromCloudEvent(ev, o)
		if err != nil {
			if errors.Is(err, ErrIgnored) {
				reasons = append(reasons, ev.Type())
				continue
			}
			return nil, err
		}
		pushes = append(pushes, ps...)
	}
	if len(pushes) == 0 {
		return nil, ignored("no image push among event types %s", strings.Join(reasons, ", "))
	}
	return pushes, nil
}

// PushesFromCloudEvent returns the pushes a registry CloudEvent announces:
// Harbor's harbor.artifact.pushed, Zot's zotregistry.image.updated and
// ACR's Microsoft.ContainerRegistry.ImagePushed (through Event Grid).
// Other types wrap ErrIgnored; unreadable data wraps ErrMalformed.
func PushesFromCloudEvent(ev event.Event) ([]Push, error) {
	return pushesFromCloudEvent(ev, ceOptions{harbor: true, zot: true, acr: true})
}

// IsPushEventType reports whether PushesFromCloudEvent reads events of
// type t, so callers can tell an event they will act on before they
// record its id.
func IsPushEventType(t string) bool {
	return t == HarborArtifactPushed || t == ZotImageUpdated || t == ACRImagePushed
}

func pushesFromCloudEvent(ev event.Event, o ceOptions) ([]Push, error) {
	t := ev.Type()
	switch {
	case o.harbor && strings.HasPrefix(t, "harbor."):
		if t != HarborArtifactPushed {
			return nil, ignored("event type %s", t)
		}
		var d harborEventData
		if err := DecodeEventData(ev, &d); err != nil {
			return nil, err
		}
		return harborPushes(&d, o.defaultHost)
	case o.zot && (t == ZotImageUpdated || o.anyZotPrefix && strings.HasSuffix(t, ".image.updated")):
		return zotPush(ev, o.defaultHost)
	case o.zot && strings.HasPrefix(t, "zotregistry."):
		return nil, ignored("event type %s", t)
	case o.acr && strings.HasPrefix(t, "Microsoft.ContainerRegistry."):
		if t != ACRImagePushed {
			return nil, ignored("event type %s", t)
		}
		var e acrEvent
		if err := DecodeEventData(ev, &e); err != nil {
			return nil, err
		}
		return acrPush(e)
	}
	return nil, ignored("event type %s", t)
}

// DecodeEventData decodes an event's data, which must be JSON. Errors
// wrap ErrMalformed.
func DecodeEventData(ev event.Event, v any) error {
	if len(ev.Data()) == 0 {
		return malformed("%s event %s has no data", ev.Type(), ev.ID())
	}
	if ct := ev.DataContentType(); ct != "" && !isJSON(ct) {
		return malformed("%s event %s: data content type %q is not JSON", ev.Type(), ev.ID(), ct)
	}
	if err := json.Unmarshal(ev.Data(), v); err != nil {
		return malformed("%s event %s: invalid data: %v", ev.Type(), ev.ID(), err)
	}
	return nil
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// hostOfURL returns the host of an absolute http(s) URL, empty otherwise.
func hostOfURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !hostRE().MatchString(u.Host) {
		return ""
	}
	return strings.ToLower(u.Host)
}
