package webhook

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
)

// CDEventsArtifactPublished prefixes the CloudEvent type of CDEvents'
// artifact published event; the spec version follows, e.g. ".0.2.0".
const CDEventsArtifactPublished = "dev.cdevents.artifact.published."

// cdEvents reads CDEvents artifact.published events (CloudEvents in any
// HTTP mode, authenticated by a static header). The subject id is a
// package URL; only OCI ones (pkg:oci/name@digest?repository_url=host/repo
// &tag=…) announce an image push.
type cdEvents struct {
	headerAuth
	host string
}

func newCDEvents(c ReceiverConfig) *cdEvents {
	return &cdEvents{headerAuth: newHeaderAuth(c), host: c.Host}
}

func (c *cdEvents) Type() string { return TypeCDEvents }

func (c *cdEvents) DeliveryIDs(r *http.Request, body []byte) []string {
	return cloudEventIDs(r.Header, body)
}

func (c *cdEvents) Parse(r *http.Request, body []byte) ([]Push, error) {
	evs, err := ParseCloudEvents(r.Header, body)
	if err != nil {
		return nil, err
	}
	var pushes []Push
	var types []string
	for _, ev := range evs {
		ps, err := c.pushes(ev)
		if errors.Is(err, ErrIgnored) {
			types = append(types, ev.Type())
			continue
		}
		if err != nil {
			return nil, err
		}
		pushes = append(pushes, ps...)
	}
	if len(pushes) == 0 {
		return nil, ignored("no OCI artifact published among event types %s", strings.Join(types, ", "))
	}
	return pushes, nil
}

func (c *cdEvents) pushes(ev event.Event) ([]Push, error) {
	if !strings.HasPrefix(ev.Type(), CDEventsArtifactPublished) {
		return nil, ignored("event type %s", ev.Type())
	}
	var d struct {
		Subject *struct {
			ID string `json:"id"`
		} `json:"subject"`
	}
	if err := DecodeEventData(ev, &d); err != nil {
		return nil, err
	}
	if d.Subject == nil || d.Subject.ID == "" {
		return nil, malformed("%s event %s: no subject.id", ev.Type(), ev.ID())
	}
	p, err := purlPush(d.Subject.ID, c.host)
	if err != nil {
		return nil, err
	}
	return normalizeAll([]Push{p})
}

// purlPush reads an OCI package URL. Other package types are ignored;
// without repository_url the image is the receiver's host and the name.
func purlPush(purl, host string) (Push, error) {
	rest, ok := strings.CutPrefix(purl, "pkg:")
	if !ok {
		return Push{}, malformed("subject id %q is not a package URL", purl)
	}
	rest = strings.TrimLeft(rest, "/")
	typ, rest, _ := strings.Cut(rest, "/")
	if !strings.EqualFold(typ, "oci") {
		return Push{}, ignored("%s package", typ)
	}
	rest, _, _ = strings.Cut(rest, "#")
	rest, qs, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(qs)
	if err != nil {
		return Push{}, malformed("package URL %q: qualifiers: %v", purl, err)
	}
	nameEnc, verEnc, _ := strings.Cut(rest, "@")
	name, err1 := url.PathUnescape(nameEnc)
	version, err2 := url.PathUnescape(verEnc)
	if err1 != nil || err2 != nil || name == "" {
		return Push{}, malformed("package URL %q: invalid name or version", purl)
	}
	p := Push{Host: host, Repository: strings.ToLower(name), Digest: version, Tag: q.Get("tag")}
	if ru := q.Get("repository_url"); ru != "" {
		ru = strings.TrimSuffix(ru, "/")
		if i := strings.Index(ru, "://"); i >= 0 {
			ru = ru[i+3:]
		}
		h, repo, ok := strings.Cut(ru, "/")
		if !ok || h == "" || repo == "" {
			return Push{}, malformed("package URL %q: repository_url %q is not host/repository", purl, ru)
		}
		p.Host, p.Repository = h, repo
	}
	return p, nil
}
