package webhook

import (
	"net/http"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
)

// zot reads zot's events extension: CloudEvents over HTTP (binary mode)
// with data {name, reference, digest, mediaType, manifest}. zot sends the
// sink's credentials as Authorization (Basic for username and password).
type zot struct {
	headerAuth
	host string
}

func newZot(c ReceiverConfig) *zot { return &zot{headerAuth: newHeaderAuth(c), host: c.Host} }

func (z *zot) Type() string { return TypeZot }

func (z *zot) DeliveryIDs(r *http.Request, body []byte) []string {
	return cloudEventIDs(r.Header, body)
}

func (z *zot) Parse(r *http.Request, body []byte) ([]Push, error) {
	return parseCloudEventsRequest(r.Header, body, ceOptions{zot: true, anyZotPrefix: true, defaultHost: z.host})
}

// zotPush reads an image.updated event. Its reference is a tag, or the
// digest for a push by digest. The registry host is only known when the
// event source was configured as the registry's URL.
func zotPush(ev event.Event, defaultHost string) ([]Push, error) {
	var d struct {
		Name      string `json:"name"`
		Reference string `json:"reference"`
		Digest    string `json:"digest"`
		MediaType string `json:"mediaType"`
	}
	if err := DecodeEventData(ev, &d); err != nil {
		return nil, err
	}
	if d.Name == "" {
		return nil, malformed("%s event %s: no data.name", ev.Type(), ev.ID())
	}
	p := Push{Host: hostOfURL(ev.Source()), Repository: d.Name, Digest: d.Digest, MediaType: d.MediaType}
	if p.Host == "" {
		p.Host = defaultHost
	}
	if strings.Contains(d.Reference, ":") {
		if p.Digest == "" {
			p.Digest = d.Reference
		}
	} else {
		p.Tag = d.Reference
	}
	return normalizeAll([]Push{p})
}
