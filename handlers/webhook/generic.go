package webhook

import (
	"encoding/json"
	"net/http"
)

// generic reads a minimal format for CI jobs and scripts:
//
//	{"host": "registry.example.test", "repository": "acme/catalog", "tag": "v1", "digest": "sha256:…"}
//
// signed with X-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>.
// host is optional (the receiver's host applies), and so are tag and digest.
type generic struct {
	signatureAuth
	host string
}

func newGeneric(c ReceiverConfig) *generic {
	return &generic{signatureAuth: signatureAuth{header: "X-Signature-256"}, host: c.Host}
}

func (g *generic) Type() string { return TypeGeneric }

func (g *generic) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var p struct {
		Host       string `json:"host"`
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		Digest     string `json:"digest"`
		MediaType  string `json:"mediaType"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if p.Repository == "" {
		return nil, malformed(`no "repository"`)
	}
	if p.Host == "" {
		p.Host = g.host
	}
	return normalizeAll([]Push{{Host: p.Host, Repository: p.Repository, Tag: p.Tag, Digest: p.Digest, MediaType: p.MediaType}})
}
