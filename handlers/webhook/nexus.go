package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // G505: Nexus signs webhooks with HMAC-SHA1; the protocol fixes it
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// nexus reads Sonatype Nexus Repository webhooks of docker repositories
// (rm:repository:component and rm:repository:asset), signed with
// X-Nexus-Webhook-Signature: the hex HMAC-SHA1 of the body keyed with the
// webhook's secret key. X-Nexus-Webhook-Delivery names each delivery.
type nexus struct{ host string }

func newNexus(c ReceiverConfig) *nexus { return &nexus{host: c.Host} }

func (n *nexus) Type() string { return TypeNexus }

const (
	nexusSignatureHeader = "X-Nexus-Webhook-Signature"
	nexusDeliveryHeader  = "X-Nexus-Webhook-Delivery"
	nexusEventHeader     = "X-Nexus-Webhook-Id"
)

func (n *nexus) Authenticate(r *http.Request, body []byte, secret string) error {
	v := r.Header.Get(nexusSignatureHeader)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, nexusSignatureHeader)
	}
	if !validHMACSHA1(secret, body, v) {
		return fmt.Errorf("%w: %s does not match the body", ErrForbidden, nexusSignatureHeader)
	}
	return nil
}

// SignSHA1 returns the hex HMAC-SHA1 of body keyed with secret, as Nexus
// sends it. Tests use it.
func SignSHA1(secret string, body []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func validHMACSHA1(secret string, body []byte, sigHex string) bool {
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != sha1.Size {
		return false
	}
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}

func (n *nexus) DeliveryIDs(r *http.Request, _ []byte) []string {
	if id := r.Header.Get(nexusDeliveryHeader); id != "" {
		return []string{id}
	}
	return nil
}

type nexusEvent struct {
	RepositoryName string `json:"repositoryName"`
	Action         string `json:"action"`
	Component      *struct {
		Format  string `json:"format"`
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"component"`
	Asset *struct {
		Format string `json:"format"`
		Name   string `json:"name"`
	} `json:"asset"`
}

func (n *nexus) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	kind := r.Header.Get(nexusEventHeader)
	if kind == "" {
		return nil, malformed("no %s header", nexusEventHeader)
	}
	if kind != "rm:repository:component" && kind != "rm:repository:asset" {
		return nil, ignored("event %s", kind)
	}
	var e nexusEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if e.Action == "" || e.RepositoryName == "" {
		return nil, malformed(`want "action" and "repositoryName"`)
	}
	if e.Action != "CREATED" && e.Action != "UPDATED" {
		return nil, ignored("action %s", e.Action)
	}
	image, ref, err := nexusImage(kind, e)
	if err != nil || image == "" {
		return nil, err
	}
	p, err := normalize(Push{Host: n.host, Repository: image, Tag: ref})
	if err != nil {
		return nil, err
	}
	// A docker repository is served on its own connector (host/image) or,
	// with path-based routing, at host/<repository>/image: announce both
	// (the second only when the repository name is a valid path).
	pushes := []Push{p}
	if routed, err := normalize(Push{Host: n.host, Repository: e.RepositoryName + "/" + image, Tag: ref}); err == nil {
		pushes = append(pushes, routed)
	}
	return pushes, nil
}

// nexusImage returns the image and the tag or digest an event is about.
func nexusImage(kind string, e nexusEvent) (image, ref string, err error) {
	if kind == "rm:repository:component" {
		c := e.Component
		if c == nil || c.Name == "" {
			return "", "", malformed("no component.name")
		}
		if c.Format != "docker" {
			return "", "", ignored("%s component", c.Format)
		}
		return c.Name, c.Version, nil
	}
	a := e.Asset
	if a == nil || a.Name == "" {
		return "", "", malformed("no asset.name")
	}
	if a.Format != "docker" {
		return "", "", ignored("%s asset", a.Format)
	}
	// Manifests are stored as v2/<image>/manifests/<tag or digest>;
	// layers, tag lists and blobs are not pushes of a manifest.
	rest, ok := strings.CutPrefix(a.Name, "v2/")
	image, ref, found := strings.Cut(rest, "/manifests/")
	if !ok || !found || image == "" || ref == "" {
		return "", "", ignored("docker asset %s is not a manifest", a.Name)
	}
	return image, ref, nil
}
