package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Envelope media types of CNCF Distribution notifications: v2 since
// Distribution 3, v1 before and in GitLab's registry.
const (
	DistributionEventsV1 = "application/vnd.docker.distribution.events.v1+json"
	DistributionEventsV2 = "application/vnd.docker.distribution.events.v2+json"
)

// distributionEnvelope is a notification request body: one or more events.
type distributionEnvelope struct {
	Events []distributionEvent `json:"events"`
}

type distributionEvent struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Target struct {
		MediaType  string `json:"mediaType"`
		Digest     string `json:"digest"`
		Repository string `json:"repository"`
		URL        string `json:"url"`
		Tag        string `json:"tag"`
		// Rename is GitLab's: present on "rename" actions only.
		Rename *struct {
			Type string `json:"type"`
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"rename"`
	} `json:"target"`
	Request struct {
		Host string `json:"host"`
	} `json:"request"`
}

// distribution reads CNCF Distribution notifications, authenticated by a
// static header set in the endpoint's "headers" configuration.
type distribution struct {
	headerAuth
	typ        string
	mediaTypes []string
	// rename accepts GitLab's rename action.
	rename bool
}

func newDistribution(c ReceiverConfig) *distribution {
	return &distribution{headerAuth: newHeaderAuth(c), typ: TypeDistribution,
		mediaTypes: []string{DistributionEventsV2, DistributionEventsV1}}
}

// newGitLab reads the GitLab container registry's notifications: the v1
// envelope, one event per request, and a "rename" action when a project
// moves. GitLab sends its registry.notification_secret as Authorization.
func newGitLab(c ReceiverConfig) *distribution {
	return &distribution{headerAuth: newHeaderAuth(c), typ: TypeGitLab,
		mediaTypes: []string{DistributionEventsV1, DistributionEventsV2}, rename: true}
}

func (d *distribution) Type() string { return d.typ }

func (d *distribution) DeliveryIDs(_ *http.Request, body []byte) []string {
	var env distributionEnvelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	ids := make([]string, 0, len(env.Events))
	for _, e := range env.Events {
		if e.ID == "" {
			// One event without an id makes the whole request unidentified.
			return nil
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func (d *distribution) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, d.mediaTypes...); err != nil {
		return nil, err
	}
	var env distributionEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, malformed("invalid JSON envelope: %v", err)
	}
	if env.Events == nil {
		return nil, malformed(`no "events" array`)
	}
	var pushes []Push
	for _, e := range env.Events {
		switch {
		case e.Action == "push":
			if isBlobEvent(e) {
				continue
			}
			pushes = append(pushes, Push{Host: e.Request.Host, Repository: e.Target.Repository,
				Tag: e.Target.Tag, Digest: e.Target.Digest, MediaType: e.Target.MediaType})
		case e.Action == "rename" && d.rename:
			p, err := renamed(e)
			if err != nil {
				return nil, err
			}
			pushes = append(pushes, p)
		}
	}
	if len(pushes) == 0 {
		return nil, ignored("no manifest push among %d event(s)", len(env.Events))
	}
	return normalizeAll(pushes)
}

// isBlobEvent tells layer and config uploads from manifest pushes: the
// registry reports blobs as application/octet-stream at a /blobs/ URL.
func isBlobEvent(e distributionEvent) bool {
	return e.Target.MediaType == "application/octet-stream" || strings.Contains(e.Target.URL, "/blobs/")
}

// renamed turns a GitLab rename into a push of the new path, so a catalog
// that pulls from there syncs now instead of at its next retry. Only the
// renamed repository itself is announced, not its sub-repositories.
func renamed(e distributionEvent) (Push, error) {
	rn := e.Target.Rename
	if rn == nil || rn.To == "" {
		return Push{}, malformed("rename event without target.rename.to")
	}
	to := rn.To
	if !strings.Contains(to, "/") {
		// A name change carries the new last path element only.
		from := rn.From
		if from == "" {
			from = e.Target.Repository
		}
		if i := strings.LastIndex(from, "/"); i >= 0 {
			to = from[:i+1] + to
		}
	}
	return Push{Host: e.Request.Host, Repository: to}, nil
}
