package regconf

import (
	"slices"
	"sync/atomic"
)

// Merge returns c with extra added: an extra [[registry]] whose prefix c
// has already appends its mirrors after c's and adds its
// NeverContactSource; any other is added as is. c's own settings
// (location, blocked, insecure) win. c may be nil; c is not changed.
func (c *Config) Merge(extra []Registry) *Config {
	out := &Config{}
	if c != nil {
		out.Registries = make([]Registry, 0, len(c.Registries)+len(extra))
		for _, r := range c.Registries {
			r.Mirrors = slices.Clone(r.Mirrors)
			out.Registries = append(out.Registries, r)
		}
	}
	for _, e := range extra {
		i := slices.IndexFunc(out.Registries, func(r Registry) bool { return r.Prefix == e.Prefix })
		if i < 0 {
			e.Mirrors = slices.Clone(e.Mirrors)
			out.Registries = append(out.Registries, e)
			continue
		}
		r := &out.Registries[i]
		r.Mirrors = append(r.Mirrors, e.Mirrors...)
		r.NeverContactSource = r.NeverContactSource || e.NeverContactSource
	}
	return out
}

// Live is a Config that is replaced while pulls read it: each pull reads
// the one in force when it starts. The zero value pulls every image from
// its own name.
type Live struct {
	p atomic.Pointer[Config]
}

// Store puts c in force.
func (l *Live) Store(c *Config) { l.p.Store(c) }

// Load returns the Config in force (nil before the first Store).
func (l *Live) Load() *Config { return l.p.Load() }

// Endpoints is Config.Endpoints of the Config in force.
func (l *Live) Endpoints(name string, byDigest bool) ([]Endpoint, error) {
	c := l.p.Load()
	if c == nil {
		return []Endpoint{{Name: name}}, nil
	}
	return c.Endpoints(name, byDigest)
}
