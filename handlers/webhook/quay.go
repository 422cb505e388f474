package webhook

import (
	"encoding/json"
	"net/http"
	"sort"
)

// quay reads Quay's repo_push notifications. Quay webhooks carry no
// secret and no signature, so the receiver listens at a path derived from
// its token. Quay sends the same URL other events (builds, vulnerability
// reports) when configured; they have no "updated_tags" and are ignored.
type quay struct {
	pathAuth
	host string
}

func newQuay(c ReceiverConfig) *quay { return &quay{host: c.Host} }

func (q *quay) Type() string { return TypeQuay }

func (q *quay) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var p struct {
		Repository  string          `json:"repository"`
		DockerURL   string          `json:"docker_url"`
		UpdatedTags json.RawMessage `json:"updated_tags"`
		BuildID     string          `json:"build_id"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if p.Repository == "" {
		return nil, malformed(`no "repository"`)
	}
	if p.BuildID != "" || len(p.UpdatedTags) == 0 || string(p.UpdatedTags) == "null" {
		return nil, ignored("not a repo_push notification")
	}
	tags, err := quayTags(p.UpdatedTags)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, ignored("repo_push without updated tags")
	}
	host := hostOf(p.DockerURL)
	if host == "" {
		host = q.host
	}
	pushes := make([]Push, 0, len(tags))
	for _, t := range tags {
		// Quay reports tags only, no digest.
		pushes = append(pushes, Push{Host: host, Repository: p.Repository, Tag: t})
	}
	return normalizeAll(pushes)
}

// quayTags reads updated_tags: a list of tags, or in older Quay releases
// an object from tag to image id.
func quayTags(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, malformed("updated_tags is neither a list of tags nor an object")
	}
	tags := make([]string, 0, len(m))
	for t := range m {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	return tags, nil
}
