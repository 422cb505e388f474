package mirrorsets

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/internal/regconf"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, kind, yaml string
		want             []Entry
		err              string
	}{
		{"digest", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: src.example.test/ns, mirrors: [m.example.test:5000/ns, m2.example.test/x/ns]}]}}`,
			[]Entry{{Source: "src.example.test/ns", Mirrors: []string{"m.example.test:5000/ns", "m2.example.test/x/ns"}}}, ""},
		{"never", "ITMS", `{metadata: {name: a}, spec: {imageTagMirrors: [{source: src.example.test, mirrors: [m.example.test], mirrorSourcePolicy: NeverContactSource}]}}`,
			[]Entry{{Source: "src.example.test", Mirrors: []string{"m.example.test"}, NeverContactSource: true}}, ""},
		{"no spec", "IDMS", `{metadata: {name: a}}`, nil, ""},
		{"other kind's field", "IDMS", `{metadata: {name: a}, spec: {imageTagMirrors: [{source: s.example.test, mirrors: [m.example.test]}]}}`, nil, ""},
		{"bad policy", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: s.example.test, mirrors: [m.example.test], mirrorSourcePolicy: Sometimes}]}}`, nil, `spec.imageDigestMirrors[0]: mirrorSourcePolicy "Sometimes"`},
		{"tag in mirror", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: s.example.test, mirrors: ["m.example.test/x:v1"]}]}}`, nil, `mirrors[0]: "m.example.test/x:v1" is not host[:port][/path]`},
		{"wildcard source", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: "*.example.test", mirrors: [m.example.test]}]}}`, nil, "source:"},
		{"no source", "ITMS", `{metadata: {name: a}, spec: {imageTagMirrors: [{mirrors: [m.example.test]}]}}`, nil, "source: missing"},
		{"not a list", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: 3}}`, nil, "spec.imageDigestMirrors"},
		{"number mirror", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: s.example.test, mirrors: [5]}]}}`, nil, "mirrors[0]: missing or not a string"},
		{"long", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: s.example.test/` + strings.Repeat("a", 300) + `, mirrors: [m.example.test]}]}}`, nil, "at most 255"},
		{"many mirrors", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [{source: s.example.test, mirrors: [` + strings.Repeat("m.example.test,", MaxMirrors) + `m.example.test]}]}}`, nil, "17 mirrors"},
		{"many entries", "IDMS", `{metadata: {name: a}, spec: {imageDigestMirrors: [` + strings.Repeat("{source: s.example.test, mirrors: [m.example.test]},", MaxEntries) + `{}]}}`, nil, "65 entries"},
	} {
		k := Digest
		if tc.kind == "ITMS" {
			k = Tag
		}
		s, err := Parse(k, obj(t, tc.yaml))
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(s.Entries, tc.want) || s.Name != "a" || s.Kind != k {
			t.Errorf("%s: %+v %v, want %+v", tc.name, s, err, tc.want)
		}
	}
}

func TestRulesEndpoints(t *testing.T) {
	d := func(name string, e ...Entry) Set { return Set{Kind: Digest, Name: name, Entries: e} }
	tg := func(name string, e ...Entry) Set { return Set{Kind: Tag, Name: name, Entries: e} }
	src := "src.example.test/ns"
	ep := func(name, mirror string) regconf.Endpoint { return regconf.Endpoint{Name: name, Mirror: mirror} }
	for _, tc := range []struct {
		name     string
		sets     []Set
		image    string
		byDigest bool
		want     []regconf.Endpoint
		err      error
	}{
		{"digest pull: digest mirrors, then the source", []Set{d("a", Entry{Source: src, Mirrors: []string{"m1.example.test/ns", "m2.example.test"}})},
			src + "/cat", true, []regconf.Endpoint{ep("m1.example.test/ns/cat", "m1.example.test/ns"), ep("m2.example.test/cat", "m2.example.test"), ep(src+"/cat", "")}, nil},
		{"tag pull ignores digest mirrors", []Set{d("a", Entry{Source: src, Mirrors: []string{"m1.example.test"}})},
			src + "/cat", false, []regconf.Endpoint{ep(src+"/cat", "")}, nil},
		{"tag pull uses tag mirrors", []Set{tg("a", Entry{Source: src, Mirrors: []string{"t.example.test"}})},
			src + "/cat", false, []regconf.Endpoint{ep("t.example.test/cat", "t.example.test"), ep(src+"/cat", "")}, nil},
		{"digest pull ignores tag mirrors", []Set{tg("a", Entry{Source: src, Mirrors: []string{"t.example.test"}})},
			src + "/cat", true, []regconf.Endpoint{ep(src+"/cat", "")}, nil},
		{"never contact source: mirrors only", []Set{d("a", Entry{Source: src, Mirrors: []string{"m.example.test"}, NeverContactSource: true})},
			src + "/cat", true, []regconf.Endpoint{ep("m.example.test/cat", "m.example.test")}, nil},
		{"never contact source, no mirror for tags: refused", []Set{d("a", Entry{Source: src, Mirrors: []string{"m.example.test"}, NeverContactSource: true})},
			src + "/cat", false, nil, regconf.ErrBlocked},
		{"two sets merge in order without repeats; source in mirrors dropped", []Set{
			d("a", Entry{Source: src, Mirrors: []string{"m1.example.test", src}}),
			d("b", Entry{Source: src, Mirrors: []string{"m1.example.test", "m2.example.test"}})},
			src + "/cat", true, []regconf.Endpoint{ep("m1.example.test/cat", "m1.example.test"), ep("m2.example.test/cat", "m2.example.test"), ep(src+"/cat", "")}, nil},
		{"an entry that only names the source is ignored", []Set{d("a", Entry{Source: src, Mirrors: []string{src}, NeverContactSource: true})},
			src + "/cat", true, []regconf.Endpoint{ep(src+"/cat", "")}, nil},
		{"longest source wins", []Set{d("a", Entry{Source: "src.example.test", Mirrors: []string{"host.example.test"}}, Entry{Source: src, Mirrors: []string{"ns.example.test"}})},
			src + "/cat", true, []regconf.Endpoint{ep("ns.example.test/cat", "ns.example.test"), ep(src+"/cat", "")}, nil},
		{"other images untouched", []Set{d("a", Entry{Source: src, Mirrors: []string{"m.example.test"}, NeverContactSource: true})},
			"src.example.test/other/cat", true, []regconf.Endpoint{ep("src.example.test/other/cat", "")}, nil},
	} {
		c := (*regconf.Config)(nil).Merge(Rules(tc.sets))
		got, err := c.Endpoints(tc.image, tc.byDigest)
		if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestMergeWithFile: the file's entry for the same source keeps its own
// mirrors first and its settings; the cluster's mirrors follow.
func TestMergeWithFile(t *testing.T) {
	file := &regconf.Config{Registries: []regconf.Registry{{Prefix: "src.example.test", Location: "src.example.test",
		Mirrors: []regconf.Mirror{{Location: "file.example.test"}}}}}
	c := file.Merge(Rules([]Set{{Kind: Digest, Name: "a", Entries: []Entry{{Source: "src.example.test", Mirrors: []string{"idms.example.test"}, NeverContactSource: true}}}}))
	got, err := c.Endpoints("src.example.test/x", true)
	want := []regconf.Endpoint{{Name: "file.example.test/x", Mirror: "file.example.test"}, {Name: "idms.example.test/x", Mirror: "idms.example.test"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v %v, want %+v", got, err, want)
	}
	if len(file.Registries[0].Mirrors) != 1 || file.Registries[0].NeverContactSource {
		t.Fatalf("the file's config was changed: %+v", file.Registries)
	}
}
