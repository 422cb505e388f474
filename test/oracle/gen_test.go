package oracle

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// gen builds one catalog from a seed. Most choices are the well-formed
// one, so a good share of cases is valid and the graph and byte checks
// matter; each rule also gets its malformed shapes.
type gen struct {
	rng *rand.Rand
	// odd is the chance (1 in odd) of each perturbation.
	odd int
}

func newGen(seed uint64) *gen {
	r := rand.New(rand.NewPCG(seed, 0x6f7261636c65))
	return &gen{rng: r, odd: []int{20, 50, 120, 400}[r.IntN(4)]}
}

func (g *gen) one(n int) bool { return g.rng.IntN(n) == 0 }
func (g *gen) odds() bool     { return g.one(g.odd) }
func (g *gen) pick(s ...string) string {
	return s[g.rng.IntN(len(s))]
}

type pkgPlan struct {
	name     string
	bundles  []string // bundle names in version order
	versions []string
	channels []*obj
}

func (g *gen) catalog() catalog {
	npkg := 1 + g.rng.IntN(2)
	if g.one(8) {
		npkg = 3
	}
	var objs [][]any // per package
	var names []string
	for i := range npkg {
		name := g.pkgName(i)
		names = append(names, name)
		objs = append(objs, g.pkg(name))
	}
	var extra []any
	if g.one(3) {
		extra = append(extra, g.deprecations(names))
	}
	// Objects of other schemas carry the odd YAML and JSON surface
	// without making the catalog invalid.
	for range g.rng.IntN(3) {
		extra = append(extra, g.oddObject(names))
	}
	return g.layout(objs, extra)
}

// layout spreads the objects over files: one package per file (so opm's
// concurrent loading cannot reorder a package's objects), extras anywhere.
func (g *gen) layout(pkgs [][]any, extra []any) catalog {
	var c catalog
	multi := g.one(4)
	if !multi {
		var all []any
		for _, p := range pkgs {
			all = append(all, p...)
		}
		all = append(all, extra...)
		c.files = append(c.files, g.file("catalog."+g.pick("yaml", "json", "yml", "yaml"), all))
		return c
	}
	for i, p := range pkgs {
		dir := g.pick("", fmt.Sprintf("p%d/", i), "a/b/")
		c.files = append(c.files, g.file(fmt.Sprintf("%spkg%d.%s", dir, i, g.pick("yaml", "json", "txt")), p))
	}
	for i, e := range extra {
		c.files = append(c.files, g.file(fmt.Sprintf("extra%d.yaml", i), []any{e}))
	}
	return c
}

func (g *gen) file(path string, objs []any) file {
	f := file{path: path, bom: g.one(25), crlf: g.one(15), sep: g.rng.IntN(35)}
	jsonAll := strings.HasSuffix(path, ".json")
	mixed := g.one(12)
	for _, v := range objs {
		isJSON := jsonAll
		if mixed && g.one(4) {
			isJSON = !isJSON
		}
		f.docs = append(f.docs, doc{v: v, json: isJSON, style: g.rng.Uint64()})
	}
	return f
}

func (g *gen) pkgName(i int) string {
	base := []string{"foo", "bar-op", "etcd", "a1", "x.y"}[i]
	if g.odds() {
		return g.pick("Foo", "a_b", "", "-x", strings.Repeat("l", 64), "ok-", "é", "1abc", "a..b")
	}
	return base
}

func (g *gen) pkg(name string) []any {
	p := &pkgPlan{name: name}
	n := 1 + g.rng.IntN(5)
	for i := range n {
		v := g.version(i)
		p.versions = append(p.versions, v)
		bn := fmt.Sprintf("%s.v%s", name, strings.ReplaceAll(v, "+", "_"))
		if g.one(4) {
			bn = fmt.Sprintf("%s.b%d", name, i) // names need not follow versions
		}
		p.bundles = append(p.bundles, bn)
	}
	if g.odds() && n > 1 {
		p.bundles[1] = p.bundles[0] // same name twice
	}
	nch := 1 + g.rng.IntN(3)
	var chNames []string
	for i := range nch {
		cn := []string{"stable", "alpha", "fast-1.0"}[i]
		if g.odds() {
			cn = g.pick("", "stable", "Stable", "c h")
		}
		chNames = append(chNames, cn)
		p.channels = append(p.channels, g.channel(p, cn))
	}
	pk := o("schema", "olm.package", "name", name)
	switch {
	case g.odds():
		pk.set("defaultChannel", g.pick("", "nope", "alpha"))
	case g.odds():
	default:
		pk.set("defaultChannel", chNames[g.rng.IntN(len(chNames))])
	}
	if g.one(3) {
		pk.set("description", g.text())
	}
	if g.one(4) {
		pk.set("icon", g.icon())
	}
	if g.odds() {
		pk.set("properties", arr{o("type", "x.y", "value", o("a", num("1")))})
	}
	g.shuffleKeys(pk)
	out := []any{pk}
	for _, ch := range p.channels {
		out = append(out, ch)
	}
	for i, b := range p.bundles {
		if g.odds() {
			continue // an entry with no bundle
		}
		out = append(out, g.bundle(p, b, p.versions[i]))
	}
	if g.odds() {
		out = append(out, g.bundle(p, name+".stray", "9.9.9"))
	}
	if g.odds() && len(out) > 2 {
		out = append(out, out[len(out)-1]) // a duplicate object
	}
	if g.one(5) {
		g.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

func (g *gen) version(i int) string {
	v := fmt.Sprintf("%d.%d.%d", 1+i/3, i%3, g.rng.IntN(3))
	switch {
	case g.odds():
		return g.pick("1.0.0", "v1.0.0", "1.0", "01.0.0", "1.0.0-01", "1.0.0-", "", "1.0.0+b..1", " 1.0.0")
	case g.one(5):
		return v + "-" + g.pick("alpha", "alpha.1", "rc.0", "0.3.7", "x-y")
	case g.one(6):
		return v + "+" + g.pick("build.1", "001", "sha.abc")
	case g.one(8):
		return v + "-beta+exp.sha.5114f85"
	}
	return v
}

// channel builds an upgrade graph over the package's bundles: usually a
// replaces chain with some skips, perturbed into cycles, self-edges,
// missing targets, extra heads and stranded entries.
func (g *gen) channel(p *pkgPlan, name string) *obj {
	members := g.rng.Perm(len(p.bundles))
	if len(p.channels) > 0 || g.odds() {
		// The first channel has every bundle, so none is in no channel.
		members = members[:1+g.rng.IntN(len(members))]
	}
	// Order by version index, so "replaces previous" is the usual chain.
	sortInts(members)
	var entries arr
	for k, m := range members {
		e := o("name", p.bundles[m])
		if k > 0 && !g.odds() {
			e.set("replaces", p.bundles[members[k-1]])
		}
		if k > 1 && g.one(3) {
			e.set("skips", arr{p.bundles[members[k-2]]})
		}
		if g.odds() {
			e.set("replaces", g.edge(p, m))
		}
		if g.odds() {
			e.set("skips", arr{g.edge(p, m)})
		}
		if g.odds() {
			e.set("skips", append(arr{g.edge(p, m)}, g.edge(p, m)))
		}
		if g.one(5) {
			e.set("skipRange", g.pick(">=0.0.1 <"+p.versions[m], "<1.0.0", "not a range", ""))
		}
		if g.odds() {
			e.set(g.pick("Replaces", "extra", "Name"), p.bundles[0])
		}
		if g.one(60) {
			e.kvs = append(e.kvs, kv{"replaces", p.bundles[0]}) // a repeated key
		}
		g.shuffleKeys(e)
		entries = append(entries, e)
	}
	if g.one(4) && len(members) > 1 {
		entries = g.template(p, members)
	}
	if g.odds() && len(entries) > 0 {
		entries = append(entries, entries[0])
	}
	if g.odds() {
		g.rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	}
	ch := o("schema", "olm.channel", "package", p.name, "name", name)
	switch {
	case g.odds():
		ch.set("entries", g.pick2(arr{}, nil, "x", arr{"x"}))
	default:
		ch.set("entries", entries)
	}
	if g.odds() {
		ch.set("package", g.pick("", "other", "Foo"))
	}
	if g.odds() {
		ch.set("properties", arr{o("type", "olm.channel", "value", o("priority", "high"))})
	}
	g.shuffleKeys(ch)
	return ch
}

func (g *gen) pick2(vs ...any) any { return vs[g.rng.IntN(len(vs))] }

// template is one of the graph shapes where opm's walk is easy to get
// wrong: members are in version order, the last one the intended head.
func (g *gen) template(p *pkgPlan, members []int) arr {
	n := make([]string, len(members))
	for i, m := range members {
		n[i] = p.bundles[m]
	}
	e := make([]*obj, len(n))
	for i := range n {
		e[i] = o("name", n[i])
	}
	h := len(n) - 1
	switch g.rng.IntN(8) {
	case 0: // the head replaces an entry it also skips
		for i := 1; i < h; i++ {
			e[i].set("replaces", n[i-1])
		}
		e[h].set("replaces", n[h-1]).set("skips", arr{n[h-1]})
	case 1: // a cycle below the head among skipped entries
		e[h].set("replaces", n[0]).set("skips", arr{n[0]})
		e[0].set("replaces", n[h-1])
		if h > 1 {
			e[h-1].set("replaces", n[0])
			e[h].set("skips", arr{n[0], n[h-1]})
		}
	case 2: // the tail replaces itself
		for i := 1; i <= h; i++ {
			e[i].set("replaces", n[i-1])
		}
		e[0].set("replaces", n[0])
	case 3: // skips only
		var all arr
		for i := 0; i < h; i++ {
			all = append(all, n[i])
		}
		e[h].set("skips", all)
	case 4: // the tail replaces a missing entry
		for i := 1; i <= h; i++ {
			e[i].set("replaces", n[i-1])
		}
		e[0].set("replaces", p.name+".gone")
	case 5: // stranded: replaced only by a skipped entry
		e[h].set("replaces", n[0])
		if h > 1 {
			e[h].set("skips", arr{n[h-1]})
			e[h-1].set("replaces", n[1%h])
		}
	case 6: // the head skips what the chain reaches
		for i := 1; i <= h; i++ {
			e[i].set("replaces", n[i-1])
		}
		e[h].set("skips", arr{n[0]})
	default: // a skip cycle
		e[h].set("replaces", n[h-1])
		e[0].set("skips", arr{n[h]})
	}
	out := make(arr, len(e))
	for i := range e {
		out[i] = e[i]
	}
	if g.one(2) {
		g.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// edge is an odd graph target from entry m.
func (g *gen) edge(p *pkgPlan, m int) any {
	switch g.rng.IntN(6) {
	case 0:
		return p.bundles[m] // self
	case 1:
		return p.name + ".missing"
	case 2:
		return ""
	case 3:
		return p.bundles[len(p.bundles)-1] // often the head: a cycle
	default:
		return p.bundles[g.rng.IntN(len(p.bundles))]
	}
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func (g *gen) bundle(p *pkgPlan, name, version string) *obj {
	b := o("schema", "olm.bundle", "name", name, "package", p.name)
	if g.odds() {
		b.set("package", g.pick("", "other", strings.ToUpper(p.name)))
	}
	hasObj := g.one(6)
	if !g.odds() || hasObj && g.one(2) {
		b.set("image", "registry.example.com/example/"+p.name+"@sha256:"+strings.Repeat("ab", 32))
	} else if g.one(2) {
		b.set("image", "")
	}
	var props arr
	pkgProp := func() *obj {
		v := o("packageName", p.name, "version", version)
		if g.odds() {
			v = o("packageName", g.pick2(p.name, "other", num("1"), nil), "version", g.pick2(version, num("1"), arr{}, nil, "1.0.0"))
		}
		return o("type", "olm.package", "value", v)
	}
	if !g.odds() {
		props = append(props, pkgProp())
	}
	if g.odds() {
		props = append(props, pkgProp())
	}
	for range g.rng.IntN(4) {
		props = append(props, g.property(p))
	}
	if hasObj {
		props = append(props, g.bundleObject())
	}
	g.rng.Shuffle(len(props), func(i, j int) { props[i], props[j] = props[j], props[i] })
	if len(props) > 0 || g.one(2) {
		b.set("properties", props)
	}
	if g.one(3) {
		ri := arr{o("name", "operator", "image", "registry.example.com/x/y:v1")}
		if g.odds() {
			ri = append(ri, o("name", num("3")), "x")
		}
		b.set("relatedImages", ri)
	}
	if g.odds() {
		b.set(g.pick("Image", "csvJson", "objects", "x-extra", "x-extra2"), "z")
	}
	g.shuffleKeys(b)
	return b
}

// property is one bundle property of a type opm parses (or not), in a
// valid or malformed shape.
func (g *gen) property(p *pkgPlan) any {
	bad := g.odds()
	typ := g.pick("olm.gvk", "olm.gvk.required", "olm.package.required", "olm.csv.metadata", "olm.constraint", "olm.channel", "olm.bundle.object", "olm.maxOpenShiftVersion", "vendor.io/thing", "")
	var v any
	switch typ {
	case "olm.gvk", "olm.gvk.required":
		v = o("group", "example.com", "kind", "Thing", "version", "v1")
		if bad {
			v = g.pick2(o("group", num("1")), o("kind", arr{}), "x", arr{}, o("version", true), o("Group", "g", "group", "h"))
		}
	case "olm.package.required":
		v = o("packageName", "etcd", "versionRange", ">=1.0.0")
		if bad {
			v = g.pick2(o("versionRange", num("2")), o("packageName", o()), num("1"), nil)
		}
	case "olm.channel":
		v = o("channelName", "stable", "priority", num("1"))
		if bad {
			v = g.pick2(o("priority", num("1.5")), o("priority", num("1e2")), o("priority", "1"), o("priority", num("99999999999999999999")), o("channelName", num("1")), o("priority", num("-3")))
		}
	case "olm.constraint":
		v = o("failureMessage", "needs x", "cel", o("rule", "properties.exists(p, p.type == 'x')"))
		if bad {
			v = g.pick2(o("cel", num("1")), "x", o("all", o("constraints", "x")))
		}
	case "olm.csv.metadata":
		v = g.csvMetadata(bad)
	case "olm.bundle.object":
		return g.bundleObjectBad(bad)
	default:
		v = g.pick2(o("a", "b"), "text", num("12"), arr{num("1"), nil}, true, nil)
	}
	prop := o("type", typ, "value", v)
	if g.odds() {
		prop = g.pick2(o("type", typ), o("value", v), o("type", num("3"), "value", v), o("Type", typ, "Value", v)).(*obj)
	}
	return prop
}

func (g *gen) csvMetadata(bad bool) any {
	m := o("displayName", "Thing Operator", "description", g.text(),
		"installModes", arr{o("type", "OwnNamespace", "supported", true), o("type", "AllNamespaces", "supported", false)},
		"keywords", arr{"a", "b"}, "maturity", "stable", "minKubeVersion", "1.20.0",
		"provider", o("name", "Example", "url", "https://example.com"),
		"maintainers", arr{o("name", "m", "email", "m@example.com")},
		"links", arr{o("name", "doc", "url", "https://x")},
		"annotations", o("capabilities", "Basic Install", "alm-examples", "[{\"a\": 1}]"),
		"labels", o("l", "v"),
		"nativeAPIs", arr{o("group", "", "version", "v1", "kind", "Pod")},
		"crdDescriptions", o("owned", arr{o("name", "things.example.com", "version", "v1", "kind", "Thing",
			"specDescriptors", arr{o("path", "size", "x-descriptors", arr{"urn:a"}, "value", o("k", num("1")))},
			"resources", arr{o("name", "", "kind", "Deployment", "version", "v1")})}),
		"apiServiceDefinitions", o("owned", arr{o("name", "x", "group", "g", "version", "v1", "kind", "K", "containerPort", num("8443"))}),
	)
	keep := o()
	for _, e := range m.kvs {
		if g.one(2) {
			keep.kvs = append(keep.kvs, e)
		}
	}
	if !bad {
		return keep
	}
	switch g.rng.IntN(14) {
	case 0:
		keep.set("installModes", arr{o("type", num("1"))})
	case 1:
		keep.set("installModes", arr{o("supported", "yes")})
	case 2:
		keep.set("keywords", "a")
	case 3:
		keep.set("annotations", o("a", num("1")))
	case 4:
		keep.set("labels", arr{})
	case 5:
		keep.set("apiServiceDefinitions", o("owned", arr{o("containerPort", num("1.5"))}))
	case 6:
		keep.set("apiServiceDefinitions", o("owned", arr{o("containerPort", num("4294967296"))}))
	case 7:
		keep.set("crdDescriptions", o("owned", arr{o("specDescriptors", arr{o("x-descriptors", arr{num("1")})})}))
	case 8:
		keep.set("provider", "Example")
	case 9:
		keep.set("maintainers", arr{o("email", true)})
	case 10:
		keep.set("nativeAPIs", arr{o("kind", num("0"))})
	case 11:
		keep.set("crdDescriptions", o("owned", arr{o("statusDescriptors", arr{o("value", nil, "path", num("3"))})}))
	case 12:
		return g.pick2("x", arr{}, num("1"))
	default:
		keep.set("minKubeVersion", arr{"1"})
	}
	return keep
}

func (g *gen) bundleObject() any { return g.bundleObjectBad(false) }

func (g *gen) bundleObjectBad(bad bool) any {
	data := base64.StdEncoding.EncodeToString([]byte(g.pick(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
		"apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x\n",
		"")))
	var v any = o("data", data)
	if bad {
		v = g.pick2(o("data", "not base64!"), o("data", base64.StdEncoding.EncodeToString([]byte("a: [b"))), o("data", num("1")),
			o("data", arr{num("104"), num("105")}), o("ref", "objects/x.yaml"), o("data", data, "ref", "x"), "x", nil,
			o("data", base64.RawStdEncoding.EncodeToString([]byte("kind: x"))), o("data", base64.StdEncoding.EncodeToString([]byte("\t- x"))))
	}
	return o("type", "olm.bundle.object", "value", v)
}

func (g *gen) icon() any {
	if g.odds() {
		return g.pick2(o("base64data", "***"), o("base64data", num("1")), o("mediatype", arr{}), "icon.png", o("base64data", "aGk"))
	}
	return o("base64data", "iVBORw0KGgo=", "mediatype", "image/png")
}

func (g *gen) text() string {
	return g.pick("A thing.", "Line one\nline two\n", "tabs\tand \"quotes\" and 'single'", "unicode é ✓ 😀", "trailing space ",
		"# not a comment", "key: value", "<b>html</b> & more", "multi\n\nparagraph\n\n", "back\\slash", "", "yes", "0x1F", "12")
}

func (g *gen) deprecations(pkgs []string) any {
	pkg := pkgs[0]
	if g.odds() {
		pkg = g.pick("", "unknown")
	}
	var entries arr
	for range 1 + g.rng.IntN(3) {
		var ref *obj
		switch g.rng.IntN(4) {
		case 0:
			ref = o("schema", "olm.package")
			if g.odds() {
				ref.set("name", pkg)
			}
		case 1:
			ref = o("schema", "olm.channel", "name", g.pick("stable", "alpha", "nope"))
		case 2:
			ref = o("schema", "olm.bundle", "name", pkg+".v"+g.pick("1.0.0", "1.0.1", "1.1.0", "9.9.9"))
		default:
			ref = o("schema", g.pick("", "olm.thing", "olm.Bundle"), "name", "x")
		}
		e := o("reference", ref, "message", g.pick("deprecated", "use another", ""))
		if g.odds() {
			e = o("message", "no reference")
		}
		entries = append(entries, e)
	}
	if g.odds() && len(entries) > 0 {
		entries = append(entries, entries[0])
	}
	d := o("schema", "olm.deprecations", "package", pkg, "entries", entries)
	if g.odds() {
		d.set("name", "named")
	}
	g.shuffleKeys(d)
	return d
}

// oddObject is an object the loaders judge by its surface: unknown
// schemas, no schema, duplicate folded keys, non-string meta fields,
// YAML tags and 1.1 scalars, odd JSON numbers.
func (g *gen) oddObject(pkgs []string) any {
	switch g.rng.IntN(16) {
	case 12:
		return o("schema", "x.y", "text", g.text(), "more", arr{g.text(), g.text()}, "nested", o("t", g.text()))
	case 13:
		return o("schema", "x.y", "anchored", o("k", g.text()), "list", arr{num("1"), true, nil, "s"})
	case 14:
		return o("schema", "x.y", "ts", raw{y: g.pick("2001-12-14t21:59:43.10-05:00", "2002-12-14", "!!timestamp 2001-12-14", "!!binary aGk=", "!!float 1", "!!int 010", "!!bool yes", "!!null ''", "0.", "-.5", "1.e3", "0xFF", "-0x1"), s: "x"})
	case 15:
		return o("schema", "x.y", "esc", raw{y: g.pick(`"\x41\u00e9\U0001F600\t\N\_\L\P"`, `'it''s'`, "\"a\\\n  b\"", "|+\n  keep\n\n", ">-\n  folded\n  line\n", "|2\n   indented\n"), s: "x"})
	case 0:
		return o("schema", "vendor.thing", "package", pkgs[0], "data", o("n", num(g.pick("1e400", "-0", "1.0", "1E2", "12345678901234567890", "0.1", "1e-7", "123456789.123"))))
	case 1:
		return o("name", "no-schema", "package", pkgs[0])
	case 2:
		return o("schema", "x.y", "Name", "a", "name", "b")
	case 3:
		return o("schema", "x.y", "name", num("3"))
	case 4:
		return o("schema", raw{y: "!!str olm.thing", s: "olm.thing"}, "v", raw{y: "!!str 123", s: "123"})
	case 5:
		return o("schema", "x.y", "flags", arr{raw{y: g.pick("yes", "No", "on", "OFF", "y", "~", "0x1F", "017", "0o17", "1_000", ".inf", "-.inf", ".NaN", "2001-12-14", "1e3", "+1", "0b101", "12:30:00"), j: "true"}})
	case 6:
		return o("schema", "x.y", "s", raw{y: "!custom thing", s: "thing"})
	case 7:
		return o("schema", "x.y", "esc", "\x00\x07\x1b\u2028\u00a0\ufeff", "bad", raw{y: `"\q"`, j: `"\q"`, s: ""})
	case 8:
		return o("schema", "x.y", "<<", o("a", "b"), "k", "v")
	case 9:
		return o("schema", "x.y", "big", num(g.pick("9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.7976931348623157e308", "5e-324", "100000000000000000000000")))
	case 10:
		return o("schema", "x.y", "surrogate", raw{y: `"\ud800"`, j: `"\ud800x"`, s: ""}, "nul", raw{y: `"\0"`, j: `"\u0000"`, s: ""})
	default:
		return o("schema", "olm.package", "name", num("7"))
	}
}

// shuffleKeys reorders an object's keys sometimes: catalogd sorts them.
func (g *gen) shuffleKeys(m *obj) {
	if g.one(3) {
		g.rng.Shuffle(len(m.kvs), func(i, j int) { m.kvs[i], m.kvs[j] = m.kvs[j], m.kvs[i] })
	}
}
