package fbc

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The model mirrors what operator-registry's declcfg.ConvertToModel builds
// and model.Validate then checks: a package's channels, each with one
// bundle per entry. Its quirks are kept on purpose, since opm validate is
// the reference: only the last channel of a package is checked for
// entries without a bundle, a default channel that names no channel
// becomes an empty one, and the replaces chain is walked past skipped
// entries.
type mPackage struct {
	name           string
	defaultChannel string
	def            *mChannel
	channels       map[string]*mChannel
	bundles        map[string]bool // every bundle of the package, by name
	lastEntries    map[string]bool // the last channel's entries left without a bundle
	dep            *string         // deprecation message, when deprecated
}

type mChannel struct {
	name, path string
	entries    map[string]*mEntry
	dep        *string
}

type mEntry struct {
	ChannelEntry
	bundle  *item // nil when no bundle object names this entry
	version semver.Version
	dep     *string
}

type checker struct{ errs []error }

func (c *checker) fail(rule, path, pkg, format string, args ...any) {
	c.errs = append(c.errs, &ValidationError{Path: path, Package: pkg, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// Validate checks the catalog and returns nil or an error joining one
// ValidationError per violation. Like opm it validates the model only
// when loading and conversion found nothing, but it reports every problem
// of those stages rather than the first.
func (v *Validator) Validate() error {
	c := &checker{errs: slices.Clone(v.errs)}
	v.loadProblems(c)
	pkgs := v.convertPackages(c)
	v.convertChannels(c, pkgs)
	v.convertBundles(c, pkgs)
	names := sortedKeys(pkgs)
	for _, name := range names {
		finishPackage(c, pkgs[name])
	}
	v.convertDeprecations(c, pkgs)
	if len(c.errs) == 0 {
		validatePackages(c, pkgs, names)
	}
	if len(c.errs) == 0 {
		return nil
	}
	return joinErrors(c.errs)
}

// validatePackages validates the packages named, in that order, on every
// core: each package's checks read only the model, so each share of the
// names gets a checker of its own, and their messages join in names'
// order, as one pass would give them. It was half of Validate for a
// catalog of 528 packages.
func validatePackages(c *checker, pkgs map[string]*mPackage, names []string) {
	shares := make([]checker, min(runtime.GOMAXPROCS(0), len(names)))
	var wg sync.WaitGroup
	for i := range shares {
		lo, hi := i*len(names)/len(shares), (i+1)*len(names)/len(shares)
		wg.Go(func() {
			for _, name := range names[lo:hi] {
				validatePackage(&shares[i], pkgs[name])
			}
		})
	}
	wg.Wait()
	for _, sc := range shares {
		c.errs = append(c.errs, sc.errs...)
	}
}

// loadProblems reports what loading found wrong with each object: fields
// of the wrong type, and bundle object values opm cannot read.
func (v *Validator) loadProblems(c *checker) {
	for _, k := range []struct {
		kind  string
		items []item
	}{{"package", v.packages}, {"channel", v.channels}, {"bundle", v.bundles}, {"deprecations", v.deprecations}} {
		for _, it := range k.items {
			pkg := it.pkg
			if k.kind == "package" {
				pkg = it.name
			}
			for _, p := range it.ref.Problems {
				c.fail(RuleDecode, it.path, pkg, "%s %q: %s", k.kind, it.name, p)
			}
			for _, p := range it.ref.ObjectProblems {
				c.fail(RuleProperty, it.path, pkg, "%s %q: %s", k.kind, it.name, p)
			}
		}
	}
}

// finishPackage ends conversion's cross-object checks of a package once
// its channels and bundles are known: the last channel's entries without
// a bundle, and a default channel that names no channel (which becomes
// an empty one, as in opm).
func finishPackage(c *checker, p *mPackage) {
	if len(p.lastEntries) > 0 {
		c.fail(RuleBundleMissing, "", p.name, "no olm.bundle blobs found for olm.channel entries %v", sortedKeys(p.lastEntries))
	}
	if p.defaultChannel != "" && p.def == nil {
		p.def = &mChannel{name: p.defaultChannel, entries: map[string]*mEntry{}}
		p.channels[p.defaultChannel] = p.def
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (v *Validator) convertPackages(c *checker) map[string]*mPackage {
	pkgs := map[string]*mPackage{}
	for _, it := range v.packages {
		switch {
		case it.name == "":
			c.fail(RulePackageName, it.path, "", "package with no name")
			continue
		case pkgs[it.name] != nil:
			c.fail(RulePackageDuplicate, it.path, it.name, "duplicate package")
			continue
		}
		if msgs := validation.IsDNS1123Label(it.name); len(msgs) > 0 {
			c.fail(RulePackageName, it.path, it.name, "invalid package name: %s", strings.Join(msgs, "; "))
		}
		pkgs[it.name] = &mPackage{name: it.name, defaultChannel: it.ref.DefaultChannel,
			channels: map[string]*mChannel{}, bundles: map[string]bool{}}
	}
	return pkgs
}

func (v *Validator) convertChannels(c *checker, pkgs map[string]*mPackage) {
	for _, it := range v.channels {
		p := pkgs[it.pkg]
		switch {
		case p == nil:
			c.fail(RuleChannelPackage, it.path, it.pkg, "channel %q: unknown package", it.name)
			continue
		case it.name == "":
			c.fail(RuleChannelName, it.path, it.pkg, "channel with no name")
			continue
		case p.channels[it.name] != nil:
			c.fail(RuleChannelDuplicate, it.path, it.pkg, "duplicate channel %q", it.name)
			continue
		}
		n := len(it.ref.Entries)
		ch := &mChannel{name: it.name, path: it.path, entries: make(map[string]*mEntry, n)}
		p.lastEntries = make(map[string]bool, n)
		// One allocation for the channel's entries, maps sized once: the
		// model is built after the last layer byte, under the sync's
		// memory limit.
		entries := make([]mEntry, n)
		for i, e := range it.ref.Entries {
			if ch.entries[e.Name] != nil {
				c.fail(RuleEntryDuplicate, it.path, it.pkg, "channel %q: duplicate entry %q", it.name, e.Name)
				continue
			}
			entries[i].ChannelEntry = e
			ch.entries[e.Name] = &entries[i]
			p.lastEntries[e.Name] = true
		}
		p.channels[it.name] = ch
		if p.defaultChannel == it.name {
			p.def = ch
		}
	}
}

func (v *Validator) convertBundles(c *checker, pkgs map[string]*mPackage) {
	for i := range v.bundles {
		it := &v.bundles[i]
		p := pkgs[it.pkg]
		switch {
		case it.pkg == "":
			c.fail(RuleBundlePackage, it.path, "", "bundle %q: package name must be set", it.name)
			continue
		case p == nil:
			c.fail(RuleBundlePackage, it.path, it.pkg, "bundle %q: unknown package", it.name)
			continue
		case p.bundles[it.name]:
			c.fail(RuleBundleDuplicate, it.path, it.pkg, "duplicate bundle %q", it.name)
			continue
		}
		p.bundles[it.name] = true
		delete(p.lastEntries, it.name)
		ver, ok := checkBundle(c, it)
		if !ok {
			continue
		}
		found := false
		for _, ch := range p.channels {
			if e := ch.entries[it.name]; e != nil {
				found = true
				e.bundle, e.version = it, ver
			}
		}
		if !found {
			c.fail(RuleBundleUnlisted, it.path, it.pkg, "bundle %q: not found in any channel entries", it.name)
		}
	}
}

// checkBundle applies conversion's checks of one bundle's properties.
func checkBundle(c *checker, it *item) (semver.Version, bool) {
	ref := it.ref
	for _, p := range ref.PropertyProblems {
		c.fail(RuleProperty, it.path, it.pkg, "bundle %q: %s", it.name, p)
	}
	if len(ref.PropertyProblems) > 0 || len(ref.ObjectProblems) > 0 {
		return semver.Version{}, false
	}
	if n := len(ref.Packages); n != 1 {
		c.fail(RulePackageProperty, it.path, it.pkg, "bundle %q: must have exactly 1 \"olm.package\" property, found %d", it.name, n)
		return semver.Version{}, false
	}
	prop := ref.Packages[0]
	if prop.PackageName != it.pkg {
		c.fail(RulePackageMismatch, it.path, it.pkg, "bundle %q: package does not match \"olm.package\" property %q", it.name, prop.PackageName)
		return semver.Version{}, false
	}
	ver, err := semver.Parse(prop.Version)
	if err != nil {
		c.fail(RuleVersion, it.path, it.pkg, "bundle %q: error parsing version %q: %v", it.name, prop.Version, err)
		return semver.Version{}, false
	}
	return ver, true
}

func (v *Validator) convertDeprecations(c *checker, pkgs map[string]*mPackage) {
	deprecated := map[string]bool{}
	for i, it := range v.deprecations {
		p := pkgs[it.pkg]
		switch {
		case it.pkg == "":
			c.fail(RuleDeprecationPackage, it.path, "", "package name must be set for deprecation item %d", i)
			continue
		case p == nil:
			c.fail(RuleDeprecationPackage, it.path, "", "cannot apply deprecations to an unknown package %q", it.pkg)
			continue
		case deprecated[it.pkg]:
			c.fail(RuleDeprecationDuplicate, it.path, it.pkg, "expected a maximum of one deprecation per package")
			continue
		}
		deprecated[it.pkg] = true
		type refKey struct{ schema, name string }
		seen := map[refKey]bool{}
		for j, e := range it.ref.Deprecations {
			if e.Schema == "" {
				c.fail(RuleDeprecationReference, it.path, it.pkg, "schema must be set for deprecation entry [%d]", j)
				continue
			}
			if k := (refKey{e.Schema, e.Name}); seen[k] {
				c.fail(RuleDeprecationDuplicate, it.path, it.pkg, "duplicate deprecation entry for %s %q", e.Schema, e.Name)
				continue
			} else {
				seen[k] = true
			}
			deprecate(c, it, p, j, e)
		}
	}
}

func deprecate(c *checker, it item, p *mPackage, j int, e DeprecationEntry) {
	msg := e.Message
	switch e.Schema {
	case SchemaBundle:
		if !p.bundles[e.Name] {
			c.fail(RuleDeprecationReference, it.path, it.pkg, "cannot deprecate bundle %q: bundle not found", e.Name)
			return
		}
		for _, ch := range p.channels {
			if en := ch.entries[e.Name]; en != nil {
				en.dep = &msg
			}
		}
	case SchemaChannel:
		ch := p.channels[e.Name]
		if ch == nil {
			c.fail(RuleDeprecationReference, it.path, it.pkg, "cannot deprecate channel %q: channel not found", e.Name)
			return
		}
		ch.dep = &msg
	case SchemaPackage:
		if e.Name != "" {
			c.fail(RuleDeprecationReference, it.path, it.pkg, "package name must be empty for deprecated package (specified %q)", e.Name)
			return
		}
		p.dep = &msg
	default:
		c.fail(RuleDeprecationReference, it.path, it.pkg, "cannot deprecate object %s %q referenced by entry %d: object schema unknown", e.Schema, e.Name, j)
	}
}

// validatePackage is model.Package.Validate with its channels and bundles.
func validatePackage(c *checker, p *mPackage) {
	if p.def == nil {
		c.fail(RuleDefaultChannel, "", p.name, "default channel must be set")
	}
	if len(p.channels) == 0 {
		c.fail(RulePackageChannels, "", p.name, "package must contain at least one channel")
	}
	for _, name := range sortedKeys(p.channels) {
		validateChannel(c, p.name, p.channels[name])
	}
	validateVersions(c, p)
	if p.dep != nil && *p.dep == "" {
		c.fail(RuleDeprecationMessage, "", p.name, "package deprecation: message must be set")
	}
}

func validateChannel(c *checker, pkg string, ch *mChannel) {
	if len(ch.entries) == 0 {
		c.fail(RuleChannelEmpty, ch.path, pkg, "channel %q: channel must contain at least one bundle", ch.name)
	} else if rule, msg := replacesChain(ch.entries); rule != "" {
		c.fail(rule, ch.path, pkg, "channel %q: %s", ch.name, msg)
	}
	for _, name := range sortedKeys(ch.entries) {
		e := ch.entries[name]
		fail := func(rule, format string, args ...any) {
			c.fail(rule, ch.path, pkg, "channel %q, bundle %q: %s", append([]any{ch.name, name}, fmt.Sprintf(format, args...))...)
		}
		if name == "" {
			fail(RuleBundleName, "name must be set")
		}
		for j, s := range e.Skips {
			if s == "" {
				fail(RuleSkipEmpty, "skips[%d] is empty", j)
			}
		}
		switch {
		case e.bundle == nil:
			// Only the last channel's entries are matched to bundles
			// while converting; an earlier one's lack shows here.
			fail(RulePackageProperty, "no olm.bundle object for this entry: must be exactly one property with type \"olm.package\"")
			fail(RuleImage, "bundle image must be set")
		case e.bundle.ref.Image == "" && !e.bundle.ref.HasObjects:
			fail(RuleImage, "bundle image must be set")
		}
		if e.dep != nil && *e.dep == "" {
			fail(RuleDeprecationMessage, "deprecation: message must be set")
		}
	}
	if ch.dep != nil && *ch.dep == "" {
		c.fail(RuleDeprecationMessage, ch.path, pkg, "channel %q: deprecation: message must be set", ch.name)
	}
}

// validateVersions reports bundles of a package that share a version
// (build metadata included, as semver.Version.String keeps it). The
// entries are sorted by that string and name rather than gathered in a
// set of names per version: that set per version was a third of what
// Validate allocated, each byte of which costs GC time under a sync's
// memory limit.
func validateVersions(c *checker, p *mPackage) {
	type entry struct {
		key, name string
		v         *semver.Version
	}
	n := 0
	for _, ch := range p.channels {
		n += len(ch.entries)
	}
	all := make([]entry, 0, n)
	for _, ch := range p.channels {
		for name, e := range ch.entries {
			all = append(all, entry{e.version.String(), name, &e.version})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.name, b.name))
	})
	// A bundle in several channels counts once.
	all = slices.CompactFunc(all, func(a, b entry) bool { return a.key == b.key && a.name == b.name })
	// groups are the versions, each with its names all[lo:hi].
	type group struct {
		v      *semver.Version
		lo, hi int
	}
	groups := make([]group, 0, len(all))
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].key == all[i].key {
			j++
		}
		groups = append(groups, group{all[i].v, i, j})
		i = j
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].v.LT(*groups[j].v) })
	var dupes []string
	for _, g := range groups {
		if g.hi-g.lo > 1 {
			names := make([]string, 0, g.hi-g.lo)
			for _, e := range all[g.lo:g.hi] {
				names = append(names, e.name)
			}
			dupes = append(dupes, fmt.Sprintf("{%s: [%s]}", *g.v, strings.Join(names, ", ")))
		}
	}
	if len(dupes) > 0 {
		c.fail(RuleVersionDuplicate, "", p.name, "duplicate versions found in bundles: [%s]", strings.Join(dupes, " "))
	}
}

// replacesChain is model.Channel.validateReplacesChain: exactly one head
// (an entry no replaces or skips names), a walk along replaces from it
// that does not stop at skipped entries and finds no cycle, and every
// entry on that walk or skipped by some entry. It returns the violated
// rule and its message, or "".
func replacesChain(entries map[string]*mEntry) (rule, msg string) {
	heads, skipped := channelHeads(entries)
	switch {
	case len(heads) == 0:
		return RuleHead, "no channel head found in graph"
	case len(heads) > 1:
		return RuleHead, "multiple channel heads found in graph: " + strings.Join(heads, ", ")
	}
	// seq is the head and each replaces in walk order; visited gives
	// where each visited entry's part of it starts.
	seq := []string{heads[0]}
	onChain := map[string]bool{heads[0]: true}
	visited := map[string]int{}
	for cur := entries[heads[0]]; cur != nil; cur = entries[cur.Replaces] {
		if _, ok := visited[cur.Name]; !ok {
			visited[cur.Name] = len(seq) - 1
		}
		seq = append(seq, cur.Replaces)
		if onChain[cur.Replaces] {
			var cycle []string
			if at, ok := visited[cur.Replaces]; ok {
				cycle = seq[at:]
			}
			return RuleCycle, "detected cycle in replaces chain of upgrade graph: " + strings.Join(cycle, " -> ")
		}
		onChain[cur.Replaces] = true
	}
	var stranded []string
	for name := range entries {
		if !onChain[name] && !skipped[name] {
			stranded = append(stranded, name)
		}
	}
	if len(stranded) > 0 {
		sort.Strings(stranded)
		return RuleStranded, "channel contains one or more stranded bundles: " + strings.Join(stranded, ", ")
	}
	return "", ""
}

// channelHeads returns the entries that no replaces or skips names,
// sorted, and the names some entry skips.
func channelHeads(entries map[string]*mEntry) (heads []string, skipped map[string]bool) {
	incoming := map[string]bool{}
	skipped = map[string]bool{}
	for _, e := range entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s], skipped[s] = true, true
		}
	}
	for name := range entries {
		if !incoming[name] {
			heads = append(heads, name)
		}
	}
	sort.Strings(heads)
	return heads, skipped
}
