package webhook

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// gitHub reads GitHub's package and registry_package events (GitHub
// Packages: the container registry). Deliveries are signed with
// X-Hub-Signature-256 and named by X-GitHub-Delivery; the ping sent when
// a webhook is created is answered 200.
type gitHub struct {
	signatureAuth
	host string
}

func newGitHub(c ReceiverConfig) *gitHub {
	return &gitHub{signatureAuth: signatureAuth{header: "X-Hub-Signature-256"}, host: c.Host}
}

func (g *gitHub) Type() string { return TypeGitHub }

func (g *gitHub) DeliveryIDs(r *http.Request, _ []byte) []string {
	if id := r.Header.Get("X-GitHub-Delivery"); id != "" {
		return []string{id}
	}
	return nil
}

type gitHubPackage struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	PackageType string `json:"package_type"`
	Owner       struct {
		Login string `json:"login"`
	} `json:"owner"`
	PackageVersion *struct {
		Version           string `json:"version"`
		PackageURL        string `json:"package_url"`
		ContainerMetadata *struct {
			Tag struct {
				Name   string `json:"name"`
				Digest string `json:"digest"`
			} `json:"tag"`
			Manifest struct {
				Digest    string `json:"digest"`
				MediaType string `json:"media_type"`
			} `json:"manifest"`
		} `json:"container_metadata"`
	} `json:"package_version"`
}

func (g *gitHub) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json", "application/x-www-form-urlencoded"); err != nil {
		return nil, err
	}
	ev := r.Header.Get("X-GitHub-Event")
	switch ev {
	case "":
		return nil, malformed("no X-GitHub-Event header")
	case "ping":
		return nil, ErrPing
	case "package", "registry_package":
	default:
		return nil, ignored("event %s", ev)
	}
	if mediaType(r.Header) == "application/x-www-form-urlencoded" {
		// The form content type wraps the JSON in a "payload" field; the
		// signature covers the form body, already checked.
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			return nil, malformed("form body without a payload field")
		}
		body = []byte(form.Get("payload"))
	}
	var p struct {
		Action          string         `json:"action"`
		Package         *gitHubPackage `json:"package"`
		RegistryPackage *gitHubPackage `json:"registry_package"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	pkg := p.Package
	if ev == "registry_package" {
		pkg = p.RegistryPackage
	}
	if pkg == nil {
		return nil, malformed("no %q object", ev)
	}
	if p.Action != "published" {
		return nil, ignored("%s action %s", ev, p.Action)
	}
	if !strings.EqualFold(pkg.PackageType, "container") {
		return nil, ignored("package type %s", pkg.PackageType)
	}
	owner := pkg.Namespace
	if owner == "" {
		owner = pkg.Owner.Login
	}
	if owner == "" || pkg.Name == "" || pkg.PackageVersion == nil {
		return nil, malformed("package without owner, name or package_version")
	}
	v := pkg.PackageVersion
	// Image names are lower case; GitHub owners need not be.
	push := Push{Repository: strings.ToLower(owner + "/" + pkg.Name), Host: hostOf(v.PackageURL)}
	if push.Host == "" {
		push.Host = g.host
	}
	if cm := v.ContainerMetadata; cm != nil {
		push.Tag = cm.Tag.Name
		push.Digest = cm.Tag.Digest
		if push.Digest == "" {
			push.Digest = cm.Manifest.Digest
		}
		push.MediaType = cm.Manifest.MediaType
	}
	if push.Digest == "" && strings.HasPrefix(v.Version, "sha256:") {
		// A container package version is named by its digest.
		push.Digest = v.Version
	}
	return normalizeAll([]Push{push})
}
