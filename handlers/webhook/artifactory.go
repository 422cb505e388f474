package webhook

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
)

// artifactory reads JFrog Artifactory's predefined webhooks of the docker
// domain. The secret is sent in X-JFrog-Event-Auth as is, or, with
// "use secret for payload signing", as the hex HMAC-SHA256 of the body.
type artifactory struct{ host string }

func newArtifactory(c ReceiverConfig) *artifactory { return &artifactory{host: c.Host} }

func (a *artifactory) Type() string { return TypeArtifactory }

const jfrogAuthHeader = "X-JFrog-Event-Auth"

func (a *artifactory) Authenticate(r *http.Request, body []byte, secret string) error {
	v := r.Header.Get(jfrogAuthHeader)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, jfrogAuthHeader)
	}
	// Both checks always run, so timing does not say which form failed.
	token := equalSecret(v, secret)
	signed := validHMAC(secret, body, v)
	if !token && !signed {
		return fmt.Errorf("%w: %s matches neither the secret nor the body's signature", ErrForbidden, jfrogAuthHeader)
	}
	return nil
}

func (a *artifactory) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var p struct {
		Domain    string `json:"domain"`
		EventType string `json:"event_type"`
		JPDOrigin string `json:"jpd_origin"`
		Data      *struct {
			RepoKey   string `json:"repo_key"`
			ImageName string `json:"image_name"`
			Tag       string `json:"tag"`
			SHA256    string `json:"sha256"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if p.Domain == "" || p.EventType == "" {
		return nil, malformed(`want "domain" and "event_type"`)
	}
	if p.Domain != "docker" || p.EventType != "pushed" {
		return nil, ignored("%s event %s", p.Domain, p.EventType)
	}
	d := p.Data
	if d == nil || d.RepoKey == "" || d.ImageName == "" {
		return nil, malformed("no data.repo_key or data.image_name")
	}
	host := a.host
	if host == "" {
		host = hostOfURL(p.JPDOrigin)
	}
	var dig string
	if b, err := hex.DecodeString(d.SHA256); err == nil && len(b) == 32 {
		// The sha256 of the manifest file is the manifest digest.
		dig = "sha256:" + d.SHA256
	}
	// Artifactory serves a repository's images at host/<repo_key>/<image>
	// (repository path access) or at <repo_key>.host/<image> (subdomain
	// access); the payload does not say which, so announce both.
	pushes := []Push{{Host: host, Repository: d.RepoKey + "/" + d.ImageName, Tag: d.Tag, Digest: dig}}
	if host != "" {
		pushes = append(pushes, Push{Host: d.RepoKey + "." + host, Repository: d.ImageName, Tag: d.Tag, Digest: dig})
	}
	return normalizeAll(pushes)
}
