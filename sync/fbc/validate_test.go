package fbc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validCatalog is a small catalog every rule accepts.
const validCatalog = `---
schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v0.1.0
- name: foo.v0.2.0
  replaces: foo.v0.1.0
---
schema: olm.bundle
package: foo
name: foo.v0.1.0
image: registry.example.test/foo/bundle:v0.1.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
---
schema: olm.bundle
package: foo
name: foo.v0.2.0
image: registry.example.test/foo/bundle:v0.2.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.2.0}
- type: olm.gvk
  value: {group: foo.io, kind: Foo, version: v1}
`

func validate(t *testing.T, files map[string]string) (*Validator, error) {
	t.Helper()
	v := NewValidator()
	for path, content := range files {
		err := Parse(strings.NewReader(content), func(o Object) error {
			v.Add(path, o)
			return nil
		})
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
	}
	return v, v.Validate()
}

func TestValidateValid(t *testing.T) {
	v, err := validate(t, map[string]string{"catalog.yaml": validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries:\n- reference: {schema: olm.bundle, name: foo.v0.1.0}\n  message: old\n- reference: {schema: olm.package}\n  message: gone\n---\nschema: custom.thing\nanything: [1, 2]\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.Stats(), (Stats{Packages: 1, Channels: 1, Bundles: 2, Deprecations: 1, Others: 1}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

func TestValidateRules(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(validCatalog, old) {
			panic("fixture lacks " + old)
		}
		return strings.Replace(validCatalog, old, new, 1)
	}
	tests := []struct {
		name    string
		catalog string
		want    string
	}{
		{"package without name", replace("name: foo\ndefaultChannel", "defaultChannel") + "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n", "package with no name"},
		{"duplicate package", validCatalog + "---\nschema: olm.package\nname: foo\n", `package "foo": duplicate package`},
		{"package name not DNS-1123", strings.ReplaceAll(validCatalog, "foo", "Foo_Op"), `package "Foo_Op": invalid package name: a lowercase RFC 1123 label`},
		{"channel of unknown package", validCatalog + "---\nschema: olm.channel\npackage: bar\nname: x\nentries: [{name: foo.v0.2.0}]\n", `package "bar": channel "x": unknown package`},
		{"channel without name", validCatalog + "---\nschema: olm.channel\npackage: foo\nentries: [{name: foo.v0.2.0}]\n", `package "foo": channel with no name`},
		{"duplicate channel", validCatalog + "---\nschema: olm.channel\npackage: foo\nname: stable\nentries: [{name: foo.v0.2.0}]\n", `package "foo": duplicate channel "stable"`},
		{"duplicate entry", replace("- name: foo.v0.1.0\n- name", "- name: foo.v0.1.0\n- name: foo.v0.1.0\n- name"), `channel "stable": duplicate entry "foo.v0.1.0"`},
		{"empty skip", replace("  replaces: foo.v0.1.0\n", "  replaces: foo.v0.1.0\n  skips: ['']\n"), `channel "stable", bundle "foo.v0.2.0": skips[0] is empty`},
		{"empty channel", validCatalog + "---\nschema: olm.channel\npackage: foo\nname: empty\n", `channel "empty": channel must contain at least one bundle`},
		{"two heads", replace("  replaces: foo.v0.1.0\n", ""), `channel "stable": multiple channel heads found in graph: foo.v0.1.0, foo.v0.2.0`},
		{"no head", replace("- name: foo.v0.1.0\n", "- name: foo.v0.1.0\n  replaces: foo.v0.2.0\n"), `channel "stable": no channel head found in graph`},
		{"cycle", replace("- name: foo.v0.1.0\n", "- name: foo.v0.3.0\n  replaces: foo.v0.2.0\n- name: foo.v0.1.0\n  replaces: foo.v0.2.0\n") + "---\nschema: olm.bundle\npackage: foo\nname: foo.v0.3.0\nimage: x\nproperties: [{type: olm.package, value: {packageName: foo, version: 0.3.0}}]\n",
			`channel "stable": detected cycle in replaces chain of upgrade graph: foo.v0.2.0 -> foo.v0.1.0 -> foo.v0.2.0`},
		{"stranded", replace("  replaces: foo.v0.1.0\n", "  replaces: foo.v0.1.0\n  skips: [foo.v0.0.2]\n- name: foo.v0.0.2\n  replaces: foo.v0.0.1\n- name: foo.v0.0.1\n") +
			"---\nschema: olm.bundle\npackage: foo\nname: foo.v0.0.1\nimage: x\nproperties: [{type: olm.package, value: {packageName: foo, version: 0.0.1}}]\n" +
			"---\nschema: olm.bundle\npackage: foo\nname: foo.v0.0.2\nimage: x\nproperties: [{type: olm.package, value: {packageName: foo, version: 0.0.2}}]\n",
			`channel "stable": channel contains one or more stranded bundles: foo.v0.0.1`},
		{"bundle without package", validCatalog + "---\nschema: olm.bundle\nname: x\n", `bundle "x": package name must be set`},
		{"bundle of unknown package", validCatalog + "---\nschema: olm.bundle\npackage: bar\nname: x\n", `package "bar": bundle "x": unknown package`},
		{"duplicate bundle", validCatalog + "---\nschema: olm.bundle\npackage: foo\nname: foo.v0.1.0\nimage: x\nproperties: [{type: olm.package, value: {packageName: foo, version: 0.1.0}}]\n", `package "foo": duplicate bundle "foo.v0.1.0"`},
		{"no olm.package property", replace("- type: olm.package\n  value: {packageName: foo, version: 0.1.0}\n", "- type: olm.gvk\n  value: {}\n"), `bundle "foo.v0.1.0": must have exactly 1 "olm.package" property, found 0`},
		{"two olm.package properties", replace("  value: {packageName: foo, version: 0.1.0}\n", "  value: {packageName: foo, version: 0.1.0}\n- type: olm.package\n  value: {packageName: foo, version: 0.1.0}\n"), `bundle "foo.v0.1.0": must have exactly 1 "olm.package" property, found 2`},
		{"olm.package names other package", replace("{packageName: foo, version: 0.1.0}", "{packageName: bar, version: 0.1.0}"), `bundle "foo.v0.1.0": package does not match "olm.package" property "bar"`},
		{"version not semver", replace("version: 0.1.0}", "version: '0.1'}"), `bundle "foo.v0.1.0": error parsing version "0.1"`},
		{"no image", replace("image: registry.example.test/foo/bundle:v0.1.0\n", ""), `bundle "foo.v0.1.0": bundle image must be set`},
		{"bundle in no channel", validCatalog + "---\nschema: olm.bundle\npackage: foo\nname: foo.v9\nimage: x\nproperties: [{type: olm.package, value: {packageName: foo, version: 9.0.0}}]\n", `bundle "foo.v9": not found in any channel entries`},
		{"entry without bundle", replace("- name: foo.v0.2.0\n  replaces", "- name: foo.v0.3.0\n  replaces: foo.v0.2.0\n- name: foo.v0.2.0\n  replaces"), `package "foo": no olm.bundle blobs found for olm.channel entries [foo.v0.3.0]`},
		{"no channel", strings.Split(validCatalog, "---\nschema: olm.bundle")[0][:strings.Index(validCatalog, "---\nschema: olm.channel")], `package "foo": channel "stable": channel must contain at least one bundle`},
		{"no default channel", replace("defaultChannel: stable\n", ""), `package "foo": default channel must be set`},
		{"unknown default channel", replace("defaultChannel: stable", "defaultChannel: fast"), `package "foo": channel "fast": channel must contain at least one bundle`},
		{"duplicate versions", replace("version: 0.2.0}", "version: 0.1.0}"), `package "foo": duplicate versions found in bundles: [{0.1.0: [foo.v0.1.0, foo.v0.2.0]}]`},
		{"type error", replace("image: registry.example.test/foo/bundle:v0.1.0", "image: registry.example.test/foo/bundle:v0.1.0\nrelatedImages: [{name: [x]}]"), `package "foo": bundle "foo.v0.1.0": relatedImages[0].name: cannot unmarshal array into a string`},
		// The rest of a bundle whose properties opm cannot read is not
		// checked, as opm stops there: no second error for its missing
		// olm.package property.
		{"unreadable property and no olm.package property", strings.Replace(replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}\n", "- type: olm.gvk\n"),
			"- type: olm.package\n  value: {packageName: foo, version: 0.2.0}\n", "", 1), `bundle "foo.v0.2.0": property[0] of type "olm.gvk": unexpected end of JSON input`},
		{"bad bundle object data and no olm.package property", strings.Replace(replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}\n", "- type: olm.bundle.object\n  value: {data: '!!'}\n"),
			"- type: olm.package\n  value: {packageName: foo, version: 0.2.0}\n", "", 1), `bundle "foo.v0.2.0": property[0] of type "olm.bundle.object": data: illegal base64 data`},
		{"image not a string", replace("image: registry.example.test/foo/bundle:v0.1.0", "image: [x]"), `package "foo": bundle "foo.v0.1.0": image: cannot unmarshal array into a string`},
		{"related image not an object", replace("image: registry.example.test/foo/bundle:v0.1.0", "image: registry.example.test/foo/bundle:v0.1.0\nrelatedImages: [x]"), `package "foo": bundle "foo.v0.1.0": relatedImages[0]: cannot unmarshal string into an object`},
		// A deprecation refused as a whole is reported once: its entries
		// are not checked.
		{"deprecation without package, with entries", validCatalog + "---\nschema: olm.deprecations\nentries: [{reference: {schema: olm.bundle, name: x}, message: m}]\n", `package name must be set for deprecation item 0`},
		{"deprecation of unknown package, with entries", validCatalog + "---\nschema: olm.deprecations\npackage: bar\nentries: [{reference: {schema: olm.bundle, name: x}, message: m}]\n", `cannot apply deprecations to an unknown package "bar"`},
		{"two deprecations, the second with entries", validCatalog + "---\nschema: olm.deprecations\npackage: foo\n---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.bundle, name: x}, message: m}]\n", `package "foo": expected a maximum of one deprecation per package`},
		{"package type error", replace("defaultChannel: stable", "defaultChannel: [stable]"), `package "foo": package "foo": defaultChannel: cannot unmarshal array into a string`},
		// A duplicate is reported once; what it holds is not checked again.
		{"channel without name, with an entry of no bundle", validCatalog + "---\nschema: olm.channel\npackage: foo\nentries: [{name: foo.v9}]\n", `package "foo": channel with no name`},
		{"duplicate channel with other entries", validCatalog + "---\nschema: olm.channel\npackage: foo\nname: stable\nentries: [{name: foo.v9}]\n", `package "foo": duplicate channel "stable"`},
		{"duplicate bundle without properties", validCatalog + "---\nschema: olm.bundle\npackage: foo\nname: foo.v0.1.0\n", `package "foo": duplicate bundle "foo.v0.1.0"`},
		{"property without value", replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}\n", "- type: olm.gvk\n"), `bundle "foo.v0.2.0": property[1] of type "olm.gvk": unexpected end of JSON input`},
		{"bad bundle object data", replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}\n", "- type: olm.bundle.object\n  value: {data: '!!'}\n"), `bundle "foo.v0.2.0": property[1] of type "olm.bundle.object": data: illegal base64 data`},
		{"deprecation without package", validCatalog + "---\nschema: olm.deprecations\n", `package name must be set for deprecation item 0`},
		{"deprecation of unknown package", validCatalog + "---\nschema: olm.deprecations\npackage: bar\n", `cannot apply deprecations to an unknown package "bar"`},
		{"two deprecations", validCatalog + "---\nschema: olm.deprecations\npackage: foo\n---\nschema: olm.deprecations\npackage: foo\n", `package "foo": expected a maximum of one deprecation per package`},
		{"deprecation entry without schema", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {name: x}, message: m}]\n", `package "foo": schema must be set for deprecation entry [0]`},
		{"deprecation without message", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.channel, name: stable}}]\n", `package "foo": channel "stable": deprecation: message must be set`},
		{"duplicate deprecation entry", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.package}, message: m}, {reference: {schema: olm.package}, message: m2}]\n", `package "foo": duplicate deprecation entry for olm.package ""`},
		{"deprecated bundle not found", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.bundle, name: foo.v9}, message: m}]\n", `package "foo": cannot deprecate bundle "foo.v9": bundle not found`},
		{"deprecated channel not found", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.channel, name: fast}, message: m}]\n", `package "foo": cannot deprecate channel "fast": channel not found`},
		{"deprecated package with name", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.package, name: foo}, message: m}]\n", `package "foo": package name must be empty for deprecated package (specified "foo")`},
		{"deprecation of unknown schema", validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.thing, name: x}, message: m}]\n", `package "foo": cannot deprecate object olm.thing "x" referenced by entry 0: object schema unknown`},
		// A property value of the wrong type is named by its property
		// alone; one of a wrong field by the field too.
		{"property value of another type", replace("value: {group: foo.io, kind: Foo, version: v1}", "value: x"), `bundle "foo.v0.2.0": property[1] of type "olm.gvk": cannot unmarshal string into Go value of type property.GVK`},
		{"channel priority not a number", replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}", "- type: olm.channel\n  value: {channelName: stable, priority: x}"), `bundle "foo.v0.2.0": property[1] of type "olm.channel": priority: cannot unmarshal string into Go value of type int`},
		// Unknown keys are skipped, not the end of the check.
		{"bad field after an unknown one", replace("value: {group: foo.io, kind: Foo, version: v1}", "value: {aaa: 1, group: [x], kind: Foo, version: v1}"), `bundle "foo.v0.2.0": property[1] of type "olm.gvk": group: cannot unmarshal array into Go value of type string`},
		// A null byte is 0, and the bytes after it are still checked.
		{"bad byte after a null one", replace("- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}", "- type: olm.bundle.object\n  value: {data: [null, x]}"), `bundle "foo.v0.2.0": property[1] of type "olm.bundle.object": data: [1]: cannot unmarshal string into Go value of type uint8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validate(t, map[string]string{"catalog.yaml": tt.catalog})
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			var all []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				all = append(all, e.Error())
			}
			if len(all) != 1 || !strings.Contains(all[0], tt.want) {
				t.Fatalf("got %d error(s):\n%s\nwant exactly one containing %q", len(all), strings.Join(all, "\n"), tt.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Path != "" && ve.Path != "catalog.yaml" {
				t.Fatalf("no ValidationError with path in %v", err)
			}
		})
	}
}

func TestValidateSchemaless(t *testing.T) {
	v := NewValidator()
	v.Add("x.json", Object{Blob: []byte(`{"name":"a"}` + "\n")})
	err := v.Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `object '{"name":"a"}' is missing root schema field (x.json)`) {
		t.Fatalf("got %v", err)
	}
}

// TestValidateBlobOnly checks objects built without Parse (Ref nil).
func TestValidateBlobOnly(t *testing.T) {
	v := NewValidator()
	var objs []Object
	if err := Parse(strings.NewReader(validCatalog), func(o Object) error {
		o.Ref = nil
		objs = append(objs, o)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		v.Add("c.yaml", o)
	}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	objs[2].Blob = []byte(strings.Replace(string(objs[2].Blob), `"image":"registry.example.test/foo/bundle:v0.1.0",`, "", 1))
	v = NewValidator()
	for _, o := range objs {
		v.Add("c.yaml", o)
	}
	if err := v.Validate(); err == nil || !strings.Contains(err.Error(), "bundle image must be set") {
		t.Fatalf("got %v", err)
	}
}

// TestValidateRealCatalogs runs real catalogs through Parse and Validate.
func TestValidateRealCatalogs(t *testing.T) {
	dirs := map[string]Stats{
		"../../testdata/fbc/tiny/configs":                  {Packages: 1, Channels: 1, Bundles: 1},
		"../../testdata/fbc/community-v4.21-3pkgs/configs": {},
	}
	if useShared(t) {
		dirs[sharedFBC+"/community-v4.21/configs"] = Stats{Bundles: 745}
		dirs[sharedFBC+"/community-v4.21-3pkgs/configs"] = Stats{Packages: 3}
		dirs[sharedFBC+"/tiny/configs"] = Stats{Packages: 1, Channels: 1, Bundles: 1}
	} else {
		t.Logf("%s not used: only the bundled fixtures are validated", sharedFBC)
	}
	for dir, want := range dirs {
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) {
			v := NewValidator()
			for _, f := range catalogFiles(t, dir) {
				fh, err := os.Open(f)
				if err != nil {
					t.Fatal(err)
				}
				err = Parse(fh, func(o Object) error { v.Add(f, o); return nil })
				fh.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			got := v.Stats()
			if got.Packages == 0 || got.Bundles == 0 {
				t.Fatalf("stats %+v: catalog not read", got)
			}
			if want.Packages != 0 && got.Packages != want.Packages || want.Bundles != 0 && got.Bundles != want.Bundles {
				t.Fatalf("stats %+v, want %+v", got, want)
			}
			t.Logf("%+v", got)
		})
	}
}

// A duplicate package is reported once, and its invalid name once: the
// duplicate's content is not checked again.
func TestValidateDuplicateOfInvalidPackage(t *testing.T) {
	_, err := validate(t, map[string]string{"catalog.yaml": strings.ReplaceAll(validCatalog, "foo", "Foo_Op") + "---\nschema: olm.package\nname: Foo_Op\n"})
	var rules []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		rules = append(rules, e.(*ValidationError).Rule)
	}
	if want := []string{RulePackageName, RulePackageDuplicate}; !slices.Equal(rules, want) {
		t.Fatalf("rules %v, want %v", rules, want)
	}
}

// Every deprecation entry without a schema is reported, not only the
// first.
func TestValidateEveryEntryWithoutSchema(t *testing.T) {
	_, err := validate(t, map[string]string{"catalog.yaml": validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {name: a}, message: m}, {reference: {name: b}, message: m}]\n"})
	var msgs []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		msgs = append(msgs, e.(*ValidationError).Msg)
	}
	if want := []string{"schema must be set for deprecation entry [0]", "schema must be set for deprecation entry [1]"}; !slices.Equal(msgs, want) {
		t.Fatalf("errors %q, want %q", msgs, want)
	}
}

// Property values opm decodes without complaint: null leaves a field (or
// the whole value) unset, and an integer fits an int field.
func TestValidateTypedValuesAccepted(t *testing.T) {
	gvk := "- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}"
	for name, with := range map[string]string{
		"null field":       "- type: olm.gvk\n  value: {group: null, kind: Foo, version: v1}",
		"null value":       "- type: olm.gvk\n  value: null",
		"null in a list":   "- type: olm.csv.metadata\n  value: {keywords: [a, null], maintainers: null, labels: {a: null}}",
		"integer priority": "- type: olm.channel\n  value: {channelName: stable, priority: 3}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := validate(t, map[string]string{"catalog.yaml": strings.Replace(validCatalog, gvk, with, 1)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Deprecation entries after a duplicate one are still checked.
func TestValidateEntriesAfterDuplicateDeprecationEntry(t *testing.T) {
	_, err := validate(t, map[string]string{"catalog.yaml": validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.package}, message: m}, {reference: {schema: olm.package}, message: m}, {reference: {schema: olm.bundle, name: foo.v9}, message: m}]\n"})
	if err == nil {
		t.Fatal("no error")
	}
	var msgs []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		msgs = append(msgs, e.(*ValidationError).Msg)
	}
	if want := []string{`duplicate deprecation entry for olm.package ""`, `cannot deprecate bundle "foo.v9": bundle not found`}; !slices.Equal(msgs, want) {
		t.Fatalf("errors %q, want %q", msgs, want)
	}
}

// TestValidateMessagesInPackageOrder: packages are checked on every core,
// yet the messages come in package-name order, as one pass gives them.
func TestValidateMessagesInPackageOrder(t *testing.T) {
	files := map[string]string{}
	var want []string
	for i := range 9 {
		name := string(rune('a'+i)) + "pkg"
		files[name+".yaml"] = strings.ReplaceAll(strings.ReplaceAll(validCatalog, "foo", name),
			"version: 0.2.0}", "version: 0.1.0}")
		want = append(want, "package \""+name+"\": duplicate versions")
	}
	_, err := validate(t, files)
	if err == nil {
		t.Fatal("want duplicate versions")
	}
	var got []string
	for _, line := range strings.Split(err.Error(), "\n")[1:] {
		got = append(got, strings.TrimSpace(line)[:len(want[0])])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("messages in this order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestValidateDuplicateVersionsGrouped: each shared version lists its
// bundles once, sorted, whatever channels hold them; versions in semver
// order, build metadata telling versions apart.
func TestValidateDuplicateVersionsGrouped(t *testing.T) {
	catalog := `---
schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.d
- name: foo.c
  replaces: foo.d
- name: foo.b
  replaces: foo.c
- name: foo.a
  replaces: foo.b
- name: foo.e
  replaces: foo.a
---
schema: olm.channel
package: foo
name: fast
entries:
- name: foo.d
- name: foo.c
  replaces: foo.d
`
	for name, version := range map[string]string{"foo.a": "1.10.0", "foo.b": "1.10.0", "foo.c": "1.9.0", "foo.d": "1.9.0", "foo.e": "1.9.0+build"} {
		catalog += "---\nschema: olm.bundle\npackage: foo\nname: " + name + "\nimage: registry.example.test/foo:" + name +
			"\nproperties:\n- type: olm.package\n  value: {packageName: foo, version: " + version + "}\n"
	}
	_, err := validate(t, map[string]string{"catalog.yaml": catalog})
	want := `package "foo": duplicate versions found in bundles: [{1.9.0: [foo.c, foo.d]} {1.10.0: [foo.a, foo.b]}]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %s", err, want)
	}
}
