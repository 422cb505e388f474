package webhook

import (
	"fmt"
	"strings"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// HostAlias declares names of the same registry: the host a registry
// reports in its notifications can differ from the one catalogs pull from
// (a mirror, a load balancer, 127.0.0.1 and localhost).
type HostAlias struct {
	// Host is the name catalogs use.
	Host string `json:"host"`
	// Aliases are other names of the same registry.
	Aliases []string `json:"aliases"`
}

// Matcher maps pushes to the catalogs whose image they may have changed.
type Matcher struct {
	canon map[string]string
}

// NewMatcher returns a Matcher with the given host aliases. A name may
// belong to one alias group only.
func NewMatcher(aliases []HostAlias) (*Matcher, error) {
	m := &Matcher{canon: map[string]string{}}
	for i, a := range aliases {
		host := strings.ToLower(strings.TrimSpace(a.Host))
		if host == "" || !hostRE().MatchString(host) {
			return nil, fmt.Errorf("%w: hostAliases[%d]: invalid host %q", ErrConfig, i, a.Host)
		}
		for _, n := range append([]string{host}, a.Aliases...) {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "" || !hostRE().MatchString(n) {
				return nil, fmt.Errorf("%w: hostAliases[%d]: invalid alias %q", ErrConfig, i, n)
			}
			if c, ok := m.canon[n]; ok && c != host {
				return nil, fmt.Errorf("%w: hostAliases[%d]: %q is already an alias of %q", ErrConfig, i, n, c)
			}
			m.canon[n] = host
		}
	}
	return m, nil
}

func (m *Matcher) canonical(host string) string {
	host = strings.ToLower(host)
	if c, ok := m.canon[host]; ok {
		return c
	}
	return host
}

// Match returns the names of the catalogs p may have changed: those whose
// image is in p's registry (up to aliases; any registry when p names none)
// and repository. A tag push only matches catalogs on that tag and a
// digest push only catalogs pinned to that digest; a push that does not
// say matches all. Catalogs in OCI layouts never match.
func (m *Matcher) Match(catalogs []catalogspec.Catalog, p Push) []string {
	var out []string
	for _, c := range catalogs {
		r, ok := c.Image.Ref()
		if !ok || r.Scheme != "reg" {
			continue
		}
		if p.Host != "" && m.canonical(r.Registry) != m.canonical(p.Host) {
			continue
		}
		if r.Repository != p.Repository {
			continue
		}
		if r.Digest != "" {
			// Pinned: only that digest can make a difference.
			if p.Digest != "" && p.Digest != r.Digest {
				continue
			}
		} else if p.Tag != "" && p.Tag != r.Tag {
			continue
		}
		out = append(out, c.Name)
	}
	return out
}
