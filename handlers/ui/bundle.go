package ui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

type gvk struct{ Group, Version, Kind string }

type pkgReq struct{ PackageName, VersionRange string }

// property is one property shown as JSON (constraints, and types the page
// has no view for).
type property struct{ Type, Value string }

type link struct{ Name, URL string }

// bundleView is the bundle page.
type bundleView struct {
	Catalog, Package, Name, Image, Version, Deprecated string
	Provided, Required                                 []gvk
	Packages                                           []pkgReq
	Constraints, Other                                 []property
	Related                                            []struct{ Name, Image string }
	Objects                                            int
	CSV                                                *csvMetadata
	Description                                        template.HTML // the CSV's, rendered
	Links                                              []link
	Channels                                           []string
}

func (h *Handler) serveBundle(w http.ResponseWriter, r *http.Request) {
	c := h.catalogFor(w, r)
	if c == nil {
		return
	}
	pkg, _ := param(r, "pkg")
	name, ok := param(r, "bundle")
	if chi.URLParam(r, "bundle") == "" {
		name, ok = r.URL.Query().Get("name"), true
	}
	if !ok || name == "" {
		h.errorPage(w, http.StatusNotFound, "no such bundle")
		return
	}
	b, err := read(r.Context(), c, catalog.Query{Schema: "olm.bundle", Package: pkg, Name: name})
	if err == nil && len(b) == 0 {
		err = fmt.Errorf("bundle: %w", storage.ErrNotExist)
	}
	if err != nil {
		h.storeError(w, r, err)
		return
	}
	line := b[:bytes.IndexByte(b, '\n')+1]
	var fb fbcBundle
	if err := json.Unmarshal(line, &fb); err != nil {
		h.storeError(w, r, fmt.Errorf("%w: %v", catalog.ErrCorrupt, err))
		return
	}
	v := bundleView{Catalog: c.Name, Package: pkg, Name: fb.Name, Image: fb.Image, Version: bundleVersion(line)}
	v.Related = make([]struct{ Name, Image string }, 0, len(fb.RelatedImages))
	for _, ri := range fb.RelatedImages {
		v.Related = append(v.Related, struct{ Name, Image string }{ri.Name, ri.Image})
	}
	for _, p := range fb.Properties {
		v.addProperty(p)
	}
	if m, ok := parseCSVMetadata(line); ok {
		v.Description = markdown(m.Description)
		m.Description = ""
		v.CSV = &m
		for _, l := range m.Links {
			// Only web links become links; anything else (javascript:,
			// data:) is shown as text.
			if u, err := url.Parse(l.URL); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
				v.Links = append(v.Links, link{l.Name, u.String()})
			} else {
				v.Links = append(v.Links, link{Name: l.Name + " (" + l.URL + ")"})
			}
		}
	}
	if dep, err := readDeprecations(r.Context(), c, pkg); err == nil {
		v.Deprecated = dep.bundles[fb.Name]
	}
	v.Channels = channelsOf(r, c, pkg, fb.Name)
	h.render(w, "bundle.html", v)
}

// channelsOf names the channels of pkg that have bundle as an entry.
func channelsOf(r *http.Request, c *catalog.Catalog, pkg, bundle string) []string {
	b, err := read(r.Context(), c, catalog.Query{Schema: "olm.channel", Package: pkg})
	if err != nil {
		return nil
	}
	var out []string
	_ = eachLine(b, func(line []byte) error { // the callback never fails
		var ch fbcChannel
		if json.Unmarshal(line, &ch) == nil && slices.ContainsFunc(ch.Entries, func(e fbcEntry) bool { return e.Name == bundle }) {
			out = append(out, ch.Name)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func (v *bundleView) addProperty(p fbcProperty) {
	switch p.Type {
	case "olm.gvk", "olm.gvk.required":
		var g gvk
		_ = json.Unmarshal(p.Value, &g) // a malformed value shows empty
		if p.Type == "olm.gvk" {
			v.Provided = append(v.Provided, g)
		} else {
			v.Required = append(v.Required, g)
		}
	case "olm.package.required":
		var q pkgReq
		_ = json.Unmarshal(p.Value, &q) // a malformed value shows empty
		v.Packages = append(v.Packages, q)
	case "olm.constraint":
		v.Constraints = append(v.Constraints, property{p.Type, indent(p.Value)})
	case "olm.bundle.object":
		v.Objects++
	case "olm.package", "olm.csv.metadata":
	default:
		v.Other = append(v.Other, property{p.Type, shorten(indent(p.Value), 4000)})
	}
}

func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// maxIcon bounds a decoded icon.
const maxIcon = 1 << 20

// iconType is the Content-Type an icon is served with, "" for a type that
// is not served: raster images as declared, and SVG, which is served
// with a policy under which it runs nothing (a sandbox, no scripts).
func iconType(mediatype string) string {
	switch t := strings.ToLower(strings.TrimSpace(mediatype)); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml":
		return t
	}
	return ""
}

// iconPolicy replaces the page policy for icons: an SVG opened on its own
// may style itself, nothing more.
const iconPolicy = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

func (h *Handler) serveIcon(w http.ResponseWriter, r *http.Request) {
	c := h.catalogFor(w, r)
	if c == nil {
		return
	}
	pkg, _ := param(r, "pkg")
	p, err := readPackage(r.Context(), c, pkg)
	if err != nil {
		h.storeError(w, r, err)
		return
	}
	if p.Icon == nil || iconType(p.Icon.MediaType) == "" || base64.StdEncoding.DecodedLen(len(p.Icon.Data)) > maxIcon {
		h.errorPage(w, http.StatusNotFound, "no icon of a type served here")
		return
	}
	img, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p.Icon.Data))
	if err != nil {
		h.errorPage(w, http.StatusNotFound, "icon data is not base64")
		return
	}
	w.Header().Set("Content-Security-Policy", iconPolicy)
	w.Header().Set("Content-Type", iconType(p.Icon.MediaType))
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(img)
}
