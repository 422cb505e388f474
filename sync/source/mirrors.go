package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/internal/regconf"
)

// ErrBlocked is returned for images of a registry registries.conf blocks.
var ErrBlocked = regconf.ErrBlocked

// Mirrors says where to pull an image (host/repository) from, in order:
// a *regconf.Config, or one that changes while pulls run (a
// *regconf.Live, the cluster's mirror sets).
type Mirrors interface {
	Endpoints(name string, byDigest bool) ([]regconf.Endpoint, error)
}

// WithRegistriesConf pulls through the mirrors of a containers
// registries.conf: for each image, its mirrors in order and then the
// primary location, and refuses blocked registries. Its insecure
// locations are not TLS-verified. nil adds nothing.
func WithRegistriesConf(c *regconf.Config) Option {
	return func(o *options) {
		if c != nil && len(c.Registries) > 0 {
			o.regconf = c
		}
	}
}

// WithMirrors resolves every registry image through m, over
// WithRegistriesConf's file (m should include it, see [regconf.Config.Merge]); its
// answer is read at each resolution, so m may change while the Client
// runs. nil adds nothing.
func WithMirrors(m Mirrors) Option {
	return func(o *options) { o.live = m }
}

// mirrored returns the endpoints of r, or ok false when r is pulled from
// its own name only (then it resolves as without mirrors: a digest
// reference without a request).
func (s *Client) mirrored(r ref.Ref) (eps []regconf.Endpoint, ok bool, err error) {
	if s.mirrors == nil || r.Scheme != "reg" {
		return nil, false, nil
	}
	name := r.Registry + "/" + r.Repository
	eps, err = s.mirrors.Endpoints(name, r.Digest != "")
	if err != nil {
		return nil, false, fmt.Errorf("resolve %s: %w", r.CommonName(), err)
	}
	if len(eps) == 1 && eps[0].Mirror == "" && eps[0].Name == name {
		return nil, false, nil
	}
	return eps, true, nil
}

// resolveMirrored resolves image at the first endpoint that answers: one
// manifest HEAD per endpoint tried. A mirror that fails, or that names
// another digest than a pinned reference, passes to the next; the primary
// location's error is the one returned.
func (s *Client) resolveMirrored(ctx context.Context, image string, r ref.Ref, eps []regconf.Endpoint) (Resolved, error) {
	var mirrorErrs []string
	for i, ep := range eps {
		last := i == len(eps)-1
		er, err := endpointRef(ep.Name, r)
		if err != nil {
			if last {
				return Resolved{}, err
			}
			continue
		}
		m, err := s.acc.client().ManifestHead(ctx, er, regclient.WithManifestRequireDigest())
		if err == nil {
			d := m.GetDescriptor().Digest
			switch {
			case d == "" || d.Validate() != nil:
				err = errors.New("registry returned no valid digest")
			case r.Digest != "" && d.String() != r.Digest:
				err = fmt.Errorf("serves %s for %s", d, r.Digest)
			default:
				res := Resolved{Image: image, Digest: d.String(), Ref: r.SetDigest(d.String()).CommonName(),
					Pinned: r.Digest != "", ref: er.SetDigest(d.String())}
				if ep.Mirror != "" {
					res.Mirror = ep.Mirror
					s.log.Debug("resolved through mirror", "image", image, "mirror", ep.Mirror, "skipped", mirrorErrs)
				}
				return res, nil
			}
		}
		if last {
			return Resolved{}, s.wrap(er, "resolve", err)
		}
		mirrorErrs = append(mirrorErrs, ep.Mirror+": "+err.Error())
	}
	return Resolved{}, fmt.Errorf("resolve %s: no endpoint", r.CommonName())
}

// endpointRef is r (its tag or digest) at an endpoint's image name.
func endpointRef(name string, r ref.Ref) (ref.Ref, error) {
	s := name
	if r.Digest != "" {
		s += "@" + r.Digest
	} else {
		s += ":" + r.Tag
	}
	er, err := ref.New(s)
	if err != nil || er.Scheme != "reg" || strings.ContainsAny(name, "@:") && !strings.Contains(name, "/") {
		return ref.Ref{}, fmt.Errorf("%w: registries.conf endpoint %q", ErrInvalidRef, name)
	}
	return er, nil
}

// insecureHosts turns registries.conf's insecure locations into hosts
// whose TLS is not verified, unless the hosts configuration names them.
func insecureHosts(c *regconf.Config, have []Host) []Host {
	if c == nil {
		return nil
	}
	known := map[string]bool{}
	for _, h := range have {
		known[strings.ToLower(h.Name)] = true
	}
	var out []Host
	add := func(location string, insecure bool) {
		host, _, _ := strings.Cut(location, "/")
		host = strings.ToLower(host)
		if insecure && host != "" && !known[host] {
			known[host] = true
			out = append(out, Host{Name: host, InsecureSkipVerify: true})
		}
	}
	for _, r := range c.Registries {
		add(r.Location, r.Insecure)
		for _, m := range r.Mirrors {
			add(m.Location, m.Insecure)
		}
	}
	return out
}
