package fbc

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidationError is one violated rule. It matches ErrInvalid with
// errors.Is; errors.As gives the details.
type ValidationError struct {
	Path    string // file of the offending object, when known
	Package string // package the rule concerns, when known
	Msg     string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Package != "" {
		fmt.Fprintf(&b, "package %q: ", e.Package)
	}
	b.WriteString(e.Msg)
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", e.Path)
	}
	return b.String()
}

func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Stats counts the objects a Validator has seen.
type Stats struct {
	Packages, Channels, Bundles, Deprecations, Others int
}

type item struct {
	path, pkg, name string
	ref             *Ref
}

// Validator collects the objects of one catalog, in catalog order, and
// checks the whole catalog once: the rules of operator-registry's
// declcfg.ConvertToModel and model.Validate (as its aggregated
// declcfg.Validate reports them), every violation reported. Objects of
// unknown schemas are counted and not validated. It is not safe for
// concurrent use.
type Validator struct {
	packages, channels, bundles, deprecations []item
	others                                    int
	errs                                      []error
}

// NewValidator returns an empty Validator.
func NewValidator() *Validator { return &Validator{} }

// Add records one object; path is the file it came from, for messages.
func (v *Validator) Add(path string, o Object) {
	ref := o.Ref
	var it *[]item
	switch o.Schema {
	case "":
		v.errs = append(v.errs, &ValidationError{Path: path, Msg: fmt.Sprintf("object '%s' is missing root schema field", bytes.TrimSpace(o.Blob))})
		return
	case SchemaPackage:
		it = &v.packages
	case SchemaChannel:
		it = &v.channels
	case SchemaBundle:
		it = &v.bundles
	case SchemaDeprecations:
		it = &v.deprecations
	default:
		v.others++
		return
	}
	if ref == nil {
		// Built by hand rather than by Parse: read the blob.
		ref = refFromBlob(o)
	}
	*it = append(*it, item{path, o.Package, o.Name, ref})
}

func refFromBlob(o Object) *Ref {
	var a arena
	p := jsonParser{a: &a, src: o.Blob}
	root, err := p.value()
	if err != nil {
		return &Ref{Problems: []string{fmt.Sprintf("blob is not valid JSON: %v", err)}}
	}
	return a.ref(root, o.Schema)
}

// Stats returns how many objects of each kind were added.
func (v *Validator) Stats() Stats {
	return Stats{len(v.packages), len(v.channels), len(v.bundles), len(v.deprecations), v.others}
}

type pkgState struct {
	defaultChannel string
	channels       map[string]*item
	entries        map[string]bool // every channel entry name
	bundles        map[string]*item
	versions       map[string][]string // version string -> bundle names
}

// Validate checks the catalog and returns nil or an error joining one
// ValidationError per violation.
func (v *Validator) Validate() error {
	errs := slices.Clone(v.errs)
	fail := func(path, pkg, format string, args ...any) {
		errs = append(errs, &ValidationError{Path: path, Package: pkg, Msg: fmt.Sprintf(format, args...)})
	}
	problems := func(kind string, it item) {
		for _, p := range it.ref.Problems {
			fail(it.path, it.pkg, "%s %q: %s", kind, it.name, p)
		}
	}

	pkgs := map[string]*pkgState{}
	for _, it := range v.packages {
		problems("package", item{it.path, it.name, it.name, it.ref})
		switch {
		case it.name == "":
			fail(it.path, "", "package with no name")
			continue
		case pkgs[it.name] != nil:
			fail(it.path, it.name, "duplicate package")
			continue
		}
		if msgs := validation.IsDNS1123Label(it.name); len(msgs) > 0 {
			fail(it.path, it.name, "invalid package name: %s", strings.Join(msgs, "; "))
		}
		pkgs[it.name] = &pkgState{
			defaultChannel: it.ref.DefaultChannel,
			channels:       map[string]*item{},
			entries:        map[string]bool{},
			bundles:        map[string]*item{},
			versions:       map[string][]string{},
		}
	}

	for i := range v.channels {
		it := &v.channels[i]
		problems("channel", *it)
		p := pkgs[it.pkg]
		switch {
		case p == nil:
			fail(it.path, it.pkg, "channel %q: unknown package", it.name)
			continue
		case it.name == "":
			fail(it.path, it.pkg, "channel with no name")
			continue
		case p.channels[it.name] != nil:
			fail(it.path, it.pkg, "duplicate channel %q", it.name)
			continue
		}
		p.channels[it.name] = it
		seen := map[string]bool{}
		for _, e := range it.ref.Entries {
			if seen[e.Name] {
				fail(it.path, it.pkg, "channel %q: duplicate entry %q", it.name, e.Name)
			}
			seen[e.Name] = true
			p.entries[e.Name] = true
			for j, s := range e.Skips {
				if s == "" {
					fail(it.path, it.pkg, "channel %q, entry %q: skips[%d] is empty", it.name, e.Name, j)
				}
			}
		}
		if msg := channelGraph(it.ref.Entries); msg != "" {
			fail(it.path, it.pkg, "channel %q: %s", it.name, msg)
		}
	}

	for i := range v.bundles {
		it := &v.bundles[i]
		problems("bundle", *it)
		p := pkgs[it.pkg]
		switch {
		case it.pkg == "":
			fail(it.path, "", "bundle %q: package name must be set", it.name)
			continue
		case p == nil:
			fail(it.path, it.pkg, "bundle %q: unknown package", it.name)
			continue
		case p.bundles[it.name] != nil:
			fail(it.path, it.pkg, "duplicate bundle %q", it.name)
			continue
		}
		p.bundles[it.name] = it
		ref := it.ref
		if n := len(ref.Packages); n != 1 {
			fail(it.path, it.pkg, "bundle %q: must have exactly 1 \"olm.package\" property, found %d", it.name, n)
		} else {
			prop := ref.Packages[0]
			if prop.PackageName != it.pkg {
				fail(it.path, it.pkg, "bundle %q: package does not match \"olm.package\" property %q", it.name, prop.PackageName)
			}
			if ver, err := semver.Parse(prop.Version); err != nil {
				fail(it.path, it.pkg, "bundle %q: error parsing version %q: %v", it.name, prop.Version, err)
			} else {
				key := ver.String()
				if prop.Release != "" {
					key += "-" + prop.Release
				}
				p.versions[key] = append(p.versions[key], it.name)
			}
		}
		if ref.Image == "" && !ref.HasObjects {
			fail(it.path, it.pkg, "bundle %q: bundle image must be set", it.name)
		}
		if !p.entries[it.name] {
			fail(it.path, it.pkg, "bundle %q: not found in any channel entries", it.name)
		}
	}

	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := pkgs[name]
		var missing []string
		for e := range p.entries {
			if p.bundles[e] == nil {
				missing = append(missing, e)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			fail("", name, "no olm.bundle blobs found for olm.channel entries %v", missing)
		}
		switch {
		case len(p.channels) == 0:
			fail("", name, "package must contain at least one channel")
		case p.defaultChannel == "":
			fail("", name, "default channel must be set")
		case p.channels[p.defaultChannel] == nil:
			fail("", name, "default channel %q not found in channels list", p.defaultChannel)
		}
		var dupes []string
		for ver, bundles := range p.versions {
			if len(bundles) > 1 {
				sort.Strings(bundles)
				dupes = append(dupes, fmt.Sprintf("{%s: [%s]}", ver, strings.Join(bundles, ", ")))
			}
		}
		if len(dupes) > 0 {
			sort.Strings(dupes)
			fail("", name, "duplicate versions found in bundles: %v", dupes)
		}
	}

	deprecated := map[string]bool{}
	for i, it := range v.deprecations {
		problems("deprecations", it)
		p := pkgs[it.pkg]
		switch {
		case it.pkg == "":
			fail(it.path, "", "package name must be set for deprecation item %d", i)
			continue
		case p == nil:
			fail(it.path, "", "cannot apply deprecations to an unknown package %q", it.pkg)
			continue
		case deprecated[it.pkg]:
			fail(it.path, it.pkg, "expected a maximum of one deprecation per package")
			continue
		}
		deprecated[it.pkg] = true
		type refKey struct{ schema, name string }
		seen := map[refKey]bool{}
		for j, e := range it.ref.Deprecations {
			if e.Schema == "" {
				fail(it.path, it.pkg, "schema must be set for deprecation entry [%d]", j)
				continue
			}
			if e.Message == "" {
				fail(it.path, it.pkg, "deprecation entry [%d] must have a message", j)
			}
			k := refKey{e.Schema, e.Name}
			if seen[k] {
				fail(it.path, it.pkg, "duplicate deprecation entry for %s %q", e.Schema, e.Name)
				continue
			}
			seen[k] = true
			switch e.Schema {
			case SchemaBundle:
				if p.bundles[e.Name] == nil {
					fail(it.path, it.pkg, "cannot deprecate bundle %q: bundle not found", e.Name)
				}
			case SchemaChannel:
				if p.channels[e.Name] == nil {
					fail(it.path, it.pkg, "cannot deprecate channel %q: channel not found", e.Name)
				}
			case SchemaPackage:
				if e.Name != "" {
					fail(it.path, it.pkg, "package name must be empty for deprecated package (specified %q)", e.Name)
				}
			default:
				fail(it.path, it.pkg, "cannot deprecate object %s %q referenced by entry %d: object schema unknown", e.Schema, e.Name, j)
			}
		}
	}

	if len(errs) == 0 {
		return nil
	}
	return joinErrors(errs)
}

// joinErrors is errors.Join with a count in front.
type joinedErrors []error

func joinErrors(errs []error) error { return joinedErrors(errs) }

func (j joinedErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d problem(s):", ErrInvalid, len(j))
	for _, e := range j {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

func (j joinedErrors) Unwrap() []error { return j }

// channelGraph checks a channel's upgrade graph as operator-registry does:
// exactly one head (an entry nothing replaces or skips), no cycle along
// the replaces chain from the head (a replaces edge to a skipped entry
// ends the walk), and no stranded entry (neither on that chain nor
// skipped). It returns "" when the graph is valid.
func channelGraph(entries []ChannelEntry) string {
	if len(entries) == 0 {
		return "channel must contain at least one bundle"
	}
	byName := make(map[string]ChannelEntry, len(entries))
	for _, e := range entries {
		byName[e.Name] = e
	}
	incoming := map[string]bool{}
	skipped := map[string]bool{}
	for _, e := range entries {
		if e.Replaces != "" && hasEntry(byName, e.Replaces) {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			skipped[s] = true
			if hasEntry(byName, s) {
				incoming[s] = true
			}
		}
	}
	var heads []string
	for _, e := range entries {
		if !incoming[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	switch {
	case len(heads) == 0:
		return "no channel head found in graph"
	case len(heads) > 1:
		sort.Strings(heads)
		return "multiple channel heads found in graph: " + strings.Join(heads, ", ")
	}
	chain := []string{heads[0]}
	onChain := map[string]int{heads[0]: 0}
	for cur, ok := byName[heads[0]]; ok; cur, ok = byName[cur.Replaces] {
		if skipped[cur.Replaces] {
			break
		}
		if at, seen := onChain[cur.Replaces]; seen {
			return "detected cycle in replaces chain of upgrade graph: " + strings.Join(append(chain[at:], cur.Replaces), " -> ")
		}
		onChain[cur.Replaces] = len(chain)
		chain = append(chain, cur.Replaces)
	}
	var stranded []string
	for name := range byName {
		if _, ok := onChain[name]; !ok && !skipped[name] {
			stranded = append(stranded, name)
		}
	}
	if len(stranded) > 0 {
		sort.Strings(stranded)
		return "channel contains one or more stranded bundles: " + strings.Join(stranded, ", ")
	}
	return ""
}

func hasEntry(m map[string]ChannelEntry, name string) bool {
	_, ok := m[name]
	return ok
}
