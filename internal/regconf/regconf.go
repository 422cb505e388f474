// Package regconf reads the containers registries.conf v2 format (and its
// .d drop-in directory) for what a pull needs: which registries are
// blocked, and the mirrors to try, in the order
// containers-registries.conf(5) gives: the mirrors in order, then the
// primary location. It does not import a container runtime.
package regconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where containers tools read the file.
const DefaultPath = "/etc/containers/registries.conf"

var (
	// ErrBlocked means the image's registry is blocked.
	ErrBlocked = errors.New("registry is blocked by registries.conf")
	// ErrInvalid means the file cannot be read as registries.conf v2.
	ErrInvalid = errors.New("invalid registries.conf")
)

// Pull-from-mirror values.
const (
	PullAll        = "all"
	PullDigestOnly = "digest-only"
	PullTagOnly    = "tag-only"
)

// Mirror is one [[registry.mirror]].
type Mirror struct {
	Location       string `toml:"location"`
	Insecure       bool   `toml:"insecure"`
	PullFromMirror string `toml:"pull-from-mirror"`
}

// Registry is one [[registry]].
type Registry struct {
	Prefix             string   `toml:"prefix"`
	Location           string   `toml:"location"`
	Insecure           bool     `toml:"insecure"`
	Blocked            bool     `toml:"blocked"`
	MirrorByDigestOnly bool     `toml:"mirror-by-digest-only"`
	Mirrors            []Mirror `toml:"mirror"`
	// NeverContactSource drops the primary location: only the mirrors are
	// tried. Not a registries.conf key; OpenShift mirror sets set it.
	NeverContactSource bool `toml:"-"`
}

// Config is the merged configuration.
type Config struct {
	Registries []Registry
}

type file struct {
	Registries []Registry `toml:"registry"`
	// Read so the v1 and search settings do not fail decoding.
	UnqualifiedSearch []string       `toml:"unqualified-search-registries"`
	ShortNameMode     string         `toml:"short-name-mode"`
	Aliases           map[string]any `toml:"aliases"`
	CredentialHelpers []string       `toml:"credential-helpers"`
	V1                map[string]any `toml:"registries"`
}

// Load reads path and then, in lexical order, the *.conf files of
// path+".d"; a drop-in's [[registry]] replaces an earlier one with the same
// prefix. A missing path is an error unless optional is set.
func Load(path string, optional bool) (*Config, error) {
	c := &Config{}
	if err := c.add(path); err != nil {
		if !(optional && errors.Is(err, os.ErrNotExist)) {
			return nil, err
		}
	}
	drop, _ := filepath.Glob(filepath.Join(path+".d", "*.conf"))
	sort.Strings(drop)
	for _, d := range drop {
		if err := c.add(d); err != nil {
			return nil, err
		}
	}
	return c, c.check()
}

func (c *Config) add(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var f file
	if _, err := toml.Decode(string(b), &f); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	// v1 search lists do not change what a full reference pulls; v1 block
	// and insecure lists would, and are refused rather than ignored.
	for k := range f.V1 {
		if k != "search" {
			return fmt.Errorf("%w: %s: the v1 [registries.%s] table is not supported; use [[registry]]", ErrInvalid, path, k)
		}
	}
	for _, r := range f.Registries {
		if r.Prefix == "" {
			r.Prefix = r.Location
		}
		replaced := false
		for i := range c.Registries {
			if c.Registries[i].Prefix == r.Prefix {
				c.Registries[i], replaced = r, true
			}
		}
		if !replaced {
			c.Registries = append(c.Registries, r)
		}
	}
	return nil
}

func (c *Config) check() error {
	for _, r := range c.Registries {
		if r.Prefix == "" {
			return fmt.Errorf("%w: a [[registry]] has neither prefix nor location", ErrInvalid)
		}
		if strings.HasPrefix(r.Prefix, "*.") && r.Location != "" {
			return fmt.Errorf("%w: wildcard prefix %q cannot have a location", ErrInvalid, r.Prefix)
		}
		for _, m := range r.Mirrors {
			switch m.PullFromMirror {
			case "", PullAll, PullDigestOnly, PullTagOnly:
			default:
				return fmt.Errorf("%w: %s: pull-from-mirror %q: want all, digest-only or tag-only", ErrInvalid, r.Prefix, m.PullFromMirror)
			}
			if m.Location == "" {
				return fmt.Errorf("%w: %s: a mirror without location", ErrInvalid, r.Prefix)
			}
			if m.PullFromMirror != "" && m.PullFromMirror != PullAll && r.MirrorByDigestOnly {
				return fmt.Errorf("%w: %s: pull-from-mirror cannot be combined with mirror-by-digest-only", ErrInvalid, r.Prefix)
			}
		}
	}
	return nil
}

// Endpoint is one place to pull an image from.
type Endpoint struct {
	// Name is the image name there: host/repository, no tag or digest.
	Name string
	// Mirror is the mirror's location; empty for the primary location.
	Mirror   string
	Insecure bool
}

// Endpoints returns where to pull name (host/repository, without tag or
// digest) from, in order; byDigest says whether the pull names a digest.
// A blocked registry gives ErrBlocked. Without a matching [[registry]]
// the image is pulled from name itself.
func (c *Config) Endpoints(name string, byDigest bool) ([]Endpoint, error) {
	r, ok := c.match(name)
	if !ok {
		return []Endpoint{{Name: name}}, nil
	}
	if r.Blocked {
		return nil, fmt.Errorf("%w: %s (prefix %s)", ErrBlocked, name, r.Prefix)
	}
	var out []Endpoint
	for _, m := range r.Mirrors {
		mode := m.PullFromMirror
		if r.MirrorByDigestOnly {
			mode = PullDigestOnly
		}
		if byDigest && mode == PullTagOnly || !byDigest && mode == PullDigestOnly {
			continue
		}
		out = append(out, Endpoint{Name: rewrite(name, r.Prefix, m.Location), Mirror: m.Location, Insecure: m.Insecure})
	}
	if r.NeverContactSource {
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: %s (prefix %s): the source is never contacted and no mirror serves %s pulls", ErrBlocked, name, r.Prefix, pullKind(byDigest))
		}
		return out, nil
	}
	primary := name
	if r.Location != "" {
		primary = rewrite(name, r.Prefix, r.Location)
	}
	return append(out, Endpoint{Name: primary, Insecure: r.Insecure}), nil
}

func pullKind(byDigest bool) string {
	if byDigest {
		return "digest"
	}
	return "tag"
}

// match finds the [[registry]] with the longest prefix matching name; a
// wildcard "*.example.test" matches hosts under example.test, after every
// exact prefix.
func (c *Config) match(name string) (Registry, bool) {
	best, bestLen := Registry{}, -1
	host, _, _ := strings.Cut(name, "/")
	for _, r := range c.Registries {
		n := -1
		switch {
		case strings.HasPrefix(r.Prefix, "*."):
			if strings.HasSuffix(host, r.Prefix[1:]) {
				n = 0 // below any exact prefix
			}
		case name == r.Prefix || strings.HasPrefix(name, r.Prefix+"/"):
			n = len(r.Prefix) + 1
		}
		if n > bestLen {
			best, bestLen = r, n
		}
	}
	return best, bestLen >= 0
}

// rewrite replaces prefix by location at the start of name. A wildcard
// prefix keeps the name (a wildcard has no location).
func rewrite(name, prefix, location string) string {
	if strings.HasPrefix(prefix, "*.") {
		host, rest, _ := strings.Cut(name, "/")
		_ = host
		return location + "/" + rest
	}
	return location + strings.TrimPrefix(name, prefix)
}
