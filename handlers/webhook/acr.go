package webhook

import (
	"encoding/json"
	"net/http"
)

// acrEvent is an Azure Container Registry webhook body, and the data of
// its Event Grid events: Distribution's event shape without the envelope.
type acrEvent struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Target struct {
		MediaType  string `json:"mediaType"`
		Digest     string `json:"digest"`
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	} `json:"target"`
	Request struct {
		Host string `json:"host"`
	} `json:"request"`
}

// acr reads Azure Container Registry webhooks (action push, delete,
// quarantine, chart_push, chart_delete, and ping from "Ping" in the
// portal), authenticated by a custom header configured on the webhook.
type acr struct{ headerAuth }

func newACR(c ReceiverConfig) *acr { return &acr{headerAuth: newHeaderAuth(c)} }

func (a *acr) Type() string { return TypeACR }

func (a *acr) DeliveryIDs(_ *http.Request, body []byte) []string {
	var e acrEvent
	if json.Unmarshal(body, &e) != nil || e.ID == "" {
		return nil
	}
	return []string{e.ID}
}

func (a *acr) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var e acrEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if e.Action == "" {
		return nil, malformed(`no "action"`)
	}
	if e.Action != "push" {
		return nil, ignored("action %s", e.Action)
	}
	return acrPush(e)
}

func acrPush(e acrEvent) ([]Push, error) {
	if e.Action != "push" {
		return nil, ignored("action %s", e.Action)
	}
	if e.Target.Repository == "" {
		return nil, malformed("no target.repository")
	}
	return normalizeAll([]Push{{Host: e.Request.Host, Repository: e.Target.Repository,
		Tag: e.Target.Tag, Digest: e.Target.Digest, MediaType: e.Target.MediaType}})
}
