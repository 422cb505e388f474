package webhook

import (
	"encoding/json"
	"net/http"
)

// dockerHub reads Docker Hub repository webhooks: one push per request,
// with push_data.tag and repository.repo_name. Docker Hub can neither
// sign nor send headers, so the receiver listens at a path derived from
// its token. The callback_url is never called: that would let a payload
// make this service send requests.
type dockerHub struct {
	pathAuth
	host string
}

func newDockerHub(c ReceiverConfig) *dockerHub {
	h := c.Host
	if h == "" {
		h = defaultRegistry()
	}
	return &dockerHub{host: h}
}

func (d *dockerHub) Type() string { return TypeDockerHub }

func (d *dockerHub) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var p struct {
		PushData *struct {
			Tag string `json:"tag"`
		} `json:"push_data"`
		Repository *struct {
			RepoName  string `json:"repo_name"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if p.PushData == nil || p.Repository == nil {
		return nil, malformed(`want "push_data" and "repository"`)
	}
	repo := p.Repository.RepoName
	if repo == "" && p.Repository.Namespace != "" && p.Repository.Name != "" {
		repo = p.Repository.Namespace + "/" + p.Repository.Name
	}
	if repo == "" {
		return nil, malformed("no repository.repo_name")
	}
	return normalizeAll([]Push{{Host: d.host, Repository: repo, Tag: p.PushData.Tag}})
}
