package imagebuild_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// meta is the part of an FBC object the checks below look at.
type meta struct {
	Schema         string
	Name           string
	Package        string
	DefaultChannel string
	Entries        []struct {
		Name      string
		Reference *struct{ Schema, Name string }
	}
	Properties []struct {
		Type  string
		Value json.RawMessage
	}
}

// catalog is a loaded FBC, checked for the rules opm enforces on the names
// this generator touches.
type catalog struct {
	packages     map[string]string          // name -> default channel
	channels     map[string]map[string]bool // package -> channel names
	bundles      map[string]map[string]bool // package -> bundle names
	deprecations map[string]int
	required     []string // packageName of every olm.package.required
	nBundles     int
	nChannels    int
	files        []string
}

func loadCatalog(t *testing.T, dir string) *catalog {
	t.Helper()
	c := &catalog{
		packages:     map[string]string{},
		channels:     map[string]map[string]bool{},
		bundles:      map[string]map[string]bool{},
		deprecations: map[string]int{},
	}
	var metas []meta
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c.files = append(c.files, filepath.ToSlash(rel))
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var m meta
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if m.Schema != "" {
				metas = append(metas, m)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Packages first: the other schemas refer to them.
	for _, m := range metas {
		if m.Schema != "olm.package" {
			continue
		}
		if _, dup := c.packages[m.Name]; dup || m.Name == "" {
			t.Fatalf("package %q is empty or duplicated", m.Name)
		}
		c.packages[m.Name] = m.DefaultChannel
		c.channels[m.Name] = map[string]bool{}
		c.bundles[m.Name] = map[string]bool{}
	}
	for _, m := range metas {
		if m.Schema == "olm.package" {
			continue
		}
		if _, ok := c.packages[m.Package]; !ok {
			t.Fatalf("%s %q refers to unknown package %q", m.Schema, m.Name, m.Package)
		}
		switch m.Schema {
		case "olm.bundle":
			if c.bundles[m.Package][m.Name] {
				t.Fatalf("package %q has bundle %q twice", m.Package, m.Name)
			}
			c.bundles[m.Package][m.Name] = true
			c.nBundles++
			var own []string
			for _, p := range m.Properties {
				var v struct{ PackageName string }
				switch p.Type {
				case "olm.package":
					_ = json.Unmarshal(p.Value, &v)
					own = append(own, v.PackageName)
				case "olm.package.required":
					_ = json.Unmarshal(p.Value, &v)
					c.required = append(c.required, v.PackageName)
				}
			}
			if len(own) != 1 || own[0] != m.Package {
				t.Fatalf("bundle %q of %q has olm.package properties %q", m.Name, m.Package, own)
			}
		case "olm.channel":
			if c.channels[m.Package][m.Name] {
				t.Fatalf("package %q has channel %q twice", m.Package, m.Name)
			}
			c.channels[m.Package][m.Name] = true
			c.nChannels++
		case "olm.deprecations":
			c.deprecations[m.Package]++
		}
	}
	for _, m := range metas {
		if m.Schema != "olm.channel" {
			continue
		}
		for _, e := range m.Entries {
			if !c.bundles[m.Package][e.Name] {
				t.Fatalf("channel %q of %q lists bundle %q, which the package lacks", m.Name, m.Package, e.Name)
			}
		}
	}
	for pkg, def := range c.packages {
		if len(c.channels[pkg]) == 0 || !c.channels[pkg][def] {
			t.Fatalf("package %q: default channel %q not among %v", pkg, def, c.channels[pkg])
		}
		if c.deprecations[pkg] > 1 {
			t.Fatalf("package %q has %d olm.deprecations", pkg, c.deprecations[pkg])
		}
	}
	return c
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		fi, err := de.Info()
		n += fi.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGenerateCopiesOfCommunityCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: copies the 13.9 MB shared catalog; TestGenerateCopiesRenamesEveryReference covers renaming")
	}
	src := testdata(t, "fbc/community-v4.21/configs")
	srcCat := loadCatalog(t, src)
	if len(srcCat.packages) != 33 || srcCat.nChannels != 78 || srcCat.nBundles != 745 {
		t.Fatalf("source: %d packages, %d channels, %d bundles", len(srcCat.packages), srcCat.nChannels, srcCat.nBundles)
	}
	dst := t.TempDir()
	if err := imagebuild.GenerateCopies(src, dst, 2); err != nil {
		t.Fatal(err)
	}
	got := loadCatalog(t, dst)
	var want []string
	for pkg := range srcCat.packages {
		want = append(want, pkg+"-copy1", pkg+"-copy2")
	}
	var have []string
	for pkg := range got.packages {
		have = append(have, pkg)
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Fatalf("packages\n got %q\nwant %q", have, want)
	}
	if got.nChannels != 2*srcCat.nChannels || got.nBundles != 2*srcCat.nBundles {
		t.Fatalf("%d channels, %d bundles; want %d, %d", got.nChannels, got.nBundles, 2*srcCat.nChannels, 2*srcCat.nBundles)
	}
	for pkg, def := range srcCat.packages {
		for _, n := range []string{"1", "2"} {
			if got.packages[pkg+"-copy"+n] != def {
				t.Fatalf("%s-copy%s: default channel %q, want %q", pkg, n, got.packages[pkg+"-copy"+n], def)
			}
			if len(got.bundles[pkg+"-copy"+n]) != len(srcCat.bundles[pkg]) {
				t.Fatalf("%s-copy%s has %d bundles, source %d", pkg, n, len(got.bundles[pkg+"-copy"+n]), len(srcCat.bundles[pkg]))
			}
		}
	}
	if f := got.files[0]; !strings.HasPrefix(f, "copy1/") {
		t.Fatalf("unexpected layout: %s", f)
	}
	// Sizes scale with the copies (16 copies of this catalog make ~220 MB).
	srcSize, dstSize := dirSize(t, src), dirSize(t, dst)
	if ratio := float64(dstSize) / float64(srcSize); ratio < 1.9 || ratio > 2.1 {
		t.Fatalf("2 copies are %d bytes, source %d (ratio %.2f)", dstSize, srcSize, ratio)
	}
}

func TestGenerateCopiesRenamesEveryReference(t *testing.T) {
	src := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A JSON stream with a deprecation and a dependency on another package.
	write("app/catalog.json", `{"schema":"olm.package","name":"app","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"app","entries":[{"name":"app.v1"}]}
{"schema":"olm.bundle","name":"app.v1","package":"app","image":"registry.example.test/x/app:v1","properties":[
 {"type":"olm.package","value":{"packageName":"app","version":"1.0.0"}},
 {"type":"olm.package.required","value":{"packageName":"lib","versionRange":">=1.0.0"}},
 {"type":"olm.gvk","value":{"group":"x.io","kind":"App","version":"v1"}}]}
{"schema":"olm.deprecations","package":"app","entries":[{"reference":{"schema":"olm.bundle","name":"app.v1"},"message":"old"}]}
`)
	write("lib/catalog.yaml", `---
schema: olm.package
name: lib
defaultChannel: alpha
---
schema: olm.channel
name: alpha
package: lib
entries:
- name: lib.v1
---
schema: olm.bundle
name: lib.v1
package: lib
image: registry.example.test/x/lib:v1
properties:
- type: olm.package
  value: {packageName: lib, version: 1.0.0}
- type: olm.bundle.object
  value: {data: eyJraW5kIjoiQ1JEIn0=}
`)
	write("lib/README.md", "not a catalog file\n")
	write(".indexignore", "hidden/\n")
	write("hidden/catalog.yaml", "schema: olm.package\nname: hidden\n")

	dst := t.TempDir()
	if err := imagebuild.GenerateCopies(src, dst, 3); err != nil {
		t.Fatal(err)
	}
	c := loadCatalog(t, dst)
	if len(c.packages) != 6 {
		t.Fatalf("packages %v", c.packages)
	}
	for _, n := range []string{"1", "2", "3"} {
		if c.deprecations["app-copy"+n] != 1 {
			t.Fatalf("app-copy%s: deprecation not renamed: %v", n, c.deprecations)
		}
	}
	slices.Sort(c.required)
	if !slices.Equal(c.required, []string{"lib-copy1", "lib-copy2", "lib-copy3"}) {
		t.Fatalf("olm.package.required names: %q", c.required)
	}
	for _, f := range c.files {
		if strings.Contains(f, "hidden") || strings.Contains(f, "README") || strings.Contains(f, ".indexignore") {
			t.Fatalf("copied %s, which is ignored or not a catalog file", f)
		}
	}
	// JSON sources stay JSON: one object a line.
	b, err := os.ReadFile(filepath.Join(dst, "copy2", "app", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !json.Valid([]byte(lines[2])) || !strings.Contains(lines[2], `"olm.gvk"`) {
		t.Fatalf("copy2/app/catalog.json:\n%s", b)
	}

	if err := imagebuild.GenerateCopies(src, t.TempDir(), 0); err == nil {
		t.Fatal("0 copies accepted")
	}
}

func TestGenerateCopiesHonoursIndexignore(t *testing.T) {
	src := testdata(t, "fbc/tiny/configs")
	dst := t.TempDir()
	if err := imagebuild.GenerateCopies(src, dst, 2); err != nil {
		t.Fatal(err)
	}
	c := loadCatalog(t, dst)
	if !slices.Equal(c.files, []string{"copy1/catalog.yaml", "copy2/catalog.yaml"}) {
		t.Fatalf("files %q (expected_all.json is hidden by .indexignore)", c.files)
	}
	if len(c.packages) != 2 {
		t.Fatalf("packages %v", c.packages)
	}
}
