// Package mirrorsets follows a cluster's OpenShift ImageDigestMirrorSets
// and ImageTagMirrorSets (config.openshift.io/v1) and turns them into
// registries.conf rules, as OpenShift's machine-config does for the nodes:
// digest mirror sets give mirrors for digest pulls only, tag mirror sets
// mirrors for tag pulls only, and NeverContactSource keeps the source out
// of the endpoints. The objects are read as unstructured, with bounds on
// what one may hold; a malformed object is skipped with a log.
package mirrorsets

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/catalogsync/catalogsync/internal/regconf"
)

// ErrInvalid is wrapped by the errors about a mirror set that is skipped.
var ErrInvalid = errors.New("invalid image mirror set")

// Kind is the kind of a mirror set.
type Kind string

// The two kinds.
const (
	Digest Kind = "ImageDigestMirrorSet"
	Tag    Kind = "ImageTagMirrorSet"
)

// Bounds on what is read; an object over them is skipped.
const (
	MaxObjects = 256 // per kind; the rest are ignored with a log
	MaxEntries = 64  // entries of one object
	MaxMirrors = 16  // mirrors of one entry
	MaxScope   = 255 // length of a source or mirror
	// Policy values.
	AllowContactingSource = "AllowContactingSource"
	NeverContactSource    = "NeverContactSource"
)

// Entry is one spec.imageDigestMirrors[] or spec.imageTagMirrors[] item.
type Entry struct {
	Source             string
	Mirrors            []string
	NeverContactSource bool
}

// Set is one parsed object.
type Set struct {
	Kind    Kind
	Name    string
	Entries []Entry
}

// scopeRe is host[:port][/path…], as the API's validation allows for a
// source or mirror (no tag, digest or wildcard).
var scopeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
})

// Parse reads one object of kind k.
func Parse(k Kind, u *unstructured.Unstructured) (Set, error) {
	s := Set{Kind: k, Name: u.GetName()}
	field := "imageDigestMirrors"
	if k == Tag {
		field = "imageTagMirrors"
	}
	items, found, err := unstructured.NestedSlice(u.Object, "spec", field)
	if err != nil {
		return s, fmt.Errorf("%w: %s %q: spec.%s: %v", ErrInvalid, k, s.Name, field, err)
	}
	if !found {
		return s, nil
	}
	if len(items) > MaxEntries {
		return s, fmt.Errorf("%w: %s %q: spec.%s has %d entries, at most %d are read", ErrInvalid, k, s.Name, field, len(items), MaxEntries)
	}
	for i, it := range items {
		e, err := parseEntry(it)
		if err != nil {
			return s, fmt.Errorf("%w: %s %q: spec.%s[%d]: %v", ErrInvalid, k, s.Name, field, i, err)
		}
		s.Entries = append(s.Entries, e)
	}
	return s, nil
}

func parseEntry(it any) (Entry, error) {
	m, ok := it.(map[string]any)
	if !ok {
		return Entry{}, errors.New("not an object")
	}
	var e Entry
	src, _ := m["source"].(string)
	if err := checkScope(src); err != nil {
		return e, fmt.Errorf("source: %w", err)
	}
	e.Source = src
	switch p, _ := m["mirrorSourcePolicy"].(string); p {
	case "", AllowContactingSource:
	case NeverContactSource:
		e.NeverContactSource = true
	default:
		return e, fmt.Errorf("mirrorSourcePolicy %q: want %s or %s", quote(p), AllowContactingSource, NeverContactSource)
	}
	raw, _ := m["mirrors"].([]any)
	if len(raw) > MaxMirrors {
		return e, fmt.Errorf("%d mirrors, at most %d are read", len(raw), MaxMirrors)
	}
	for j, r := range raw {
		s, _ := r.(string)
		if err := checkScope(s); err != nil {
			return e, fmt.Errorf("mirrors[%d]: %w", j, err)
		}
		e.Mirrors = append(e.Mirrors, s)
	}
	return e, nil
}

func checkScope(s string) error {
	switch {
	case s == "":
		return errors.New("missing or not a string")
	case len(s) > MaxScope:
		return fmt.Errorf("%d characters, at most %d", len(s), MaxScope)
	case !scopeRe().MatchString(s):
		return fmt.Errorf("%q is not host[:port][/path]", quote(s))
	}
	return nil
}

// quote keeps a bad value short in a log line.
func quote(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Rules turns the sets into registries.conf rules, one [[registry]] per
// source: the digest sets' mirrors (pull-from-mirror digest-only), then
// the tag sets' (tag-only). Sets are taken in the order given (callers
// sort them by kind and name); a mirror already listed for the source, or
// the source itself, is not repeated; an entry without any other mirror
// is ignored. NeverContactSource in any entry of a source applies to it.
func Rules(sets []Set) []regconf.Registry {
	var out []regconf.Registry
	index := map[string]int{}
	for _, s := range sets {
		mode := regconf.PullDigestOnly
		if s.Kind == Tag {
			mode = regconf.PullTagOnly
		}
		for _, e := range s.Entries {
			if !slices.ContainsFunc(e.Mirrors, func(m string) bool { return m != e.Source }) {
				continue
			}
			i, ok := index[e.Source]
			if !ok {
				i = len(out)
				index[e.Source] = i
				out = append(out, regconf.Registry{Prefix: e.Source, Location: e.Source})
			}
			r := &out[i]
			r.NeverContactSource = r.NeverContactSource || e.NeverContactSource
			for _, m := range e.Mirrors {
				if m == e.Source || slices.ContainsFunc(r.Mirrors, func(x regconf.Mirror) bool {
					return x.Location == m && x.PullFromMirror == mode
				}) {
					continue
				}
				r.Mirrors = append(r.Mirrors, regconf.Mirror{Location: m, PullFromMirror: mode})
			}
		}
	}
	return out
}

// sortKey orders sets: digest sets first, then by name.
func sortKey(s Set) string {
	k := "1"
	if s.Kind == Tag {
		k = "2"
	}
	return k + "/" + strings.ToLower(s.Name) + "/" + s.Name
}
