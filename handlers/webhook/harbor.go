package webhook

import (
	"encoding/json"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"
)

// harborEventData is Harbor's event_data, and the data of its CloudEvents.
type harborEventData struct {
	Resources []struct {
		Digest      string `json:"digest"`
		Tag         string `json:"tag"`
		ResourceURL string `json:"resource_url"`
	} `json:"resources"`
	Repository *struct {
		Name         string `json:"name"`
		Namespace    string `json:"namespace"`
		RepoFullName string `json:"repo_full_name"`
	} `json:"repository"`
}

// harbor reads Harbor webhooks in either payload format: Default (JSON
// with "type") or CloudEvents (structured mode). Harbor sends the
// endpoint's "Auth Header" value as Authorization.
type harbor struct {
	headerAuth
	host string
}

func newHarbor(c ReceiverConfig) *harbor { return &harbor{headerAuth: newHeaderAuth(c), host: c.Host} }

func (h *harbor) Type() string { return TypeHarbor }

func (h *harbor) DeliveryIDs(r *http.Request, body []byte) []string {
	if mediaType(r.Header) != event.ApplicationCloudEventsJSON {
		// The default format carries no delivery id.
		return nil
	}
	return cloudEventIDs(r.Header, body)
}

func (h *harbor) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json", event.ApplicationCloudEventsJSON); err != nil {
		return nil, err
	}
	if mediaType(r.Header) == event.ApplicationCloudEventsJSON {
		return parseCloudEventsRequest(r.Header, body, ceOptions{harbor: true, defaultHost: h.host})
	}
	var p struct {
		Type      string           `json:"type"`
		EventData *harborEventData `json:"event_data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if p.Type == "" {
		return nil, malformed(`no event "type"`)
	}
	if p.Type != "PUSH_ARTIFACT" {
		return nil, ignored("event type %s", p.Type)
	}
	return harborPushes(p.EventData, h.host)
}

// harborPushes reads a PUSH_ARTIFACT event: the repository, and one push
// per resource (the tag is the digest when the artifact was untagged).
func harborPushes(d *harborEventData, defaultHost string) ([]Push, error) {
	if d == nil || d.Repository == nil {
		return nil, malformed("no event_data.repository")
	}
	repo := d.Repository.RepoFullName
	if repo == "" && d.Repository.Namespace != "" && d.Repository.Name != "" {
		repo = d.Repository.Namespace + "/" + d.Repository.Name
	}
	if repo == "" {
		return nil, malformed("no event_data.repository.repo_full_name")
	}
	if len(d.Resources) == 0 {
		return nil, malformed("no event_data.resources")
	}
	pushes := make([]Push, 0, len(d.Resources))
	for _, res := range d.Resources {
		host := hostOf(res.ResourceURL)
		if host == "" {
			host = defaultHost
		}
		pushes = append(pushes, Push{Host: host, Repository: repo, Tag: res.Tag, Digest: res.Digest})
	}
	return normalizeAll(pushes)
}
