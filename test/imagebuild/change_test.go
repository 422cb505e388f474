package imagebuild_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const changeSrc = `---
schema: olm.package
name: op
defaultChannel: stable
---
schema: olm.channel
name: alpha
package: op
entries:
  - name: op.v0.9.0
---
schema: olm.channel
name: stable
package: op
entries:
  - name: op.v1.0.0
  - name: op.v1.0.1
    replaces: op.v1.0.0
  - name: op.v1.0.2
    replaces: op.v1.0.1
---
schema: olm.bundle
name: op.v0.9.0
package: op
image: quay.example/op/bundle:v0.9.0
properties:
  - type: olm.package
    value: {packageName: op, version: 0.9.0}
  - type: olm.csv.metadata
    value: {annotations: {createdAt: "2020-01-01T00:00:00Z"}, displayName: Op}
---
schema: olm.bundle
name: op.v1.0.0
package: op
image: quay.example/op/bundle@sha256:1111111111111111111111111111111111111111111111111111111111111111
properties:
  - type: olm.package
    value: {packageName: op, version: 1.0.0}
  - type: olm.csv.metadata
    value: {displayName: Op}
---
schema: olm.bundle
name: op.v1.0.1
package: op
image: quay.example/op/bundle:v1.0.1
properties:
  - type: olm.package
    value: {packageName: op, version: 1.0.1}
---
schema: olm.bundle
name: op.v1.0.2
package: op
image: quay.example/op/bundle:v1.0.2
relatedImages:
  - {name: "", image: "quay.example/op/bundle:v1.0.2"}
  - {name: operator, image: "quay.example/op/op:v1.0.2"}
properties:
  - type: olm.package
    value: {packageName: op, version: 1.0.2}
  - type: olm.gvk
    value: {group: example.com, kind: Op, version: v1}
`

// docsOf reads a catalog file's documents, each re-encoded as JSON.
func docsOf(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		out = append(out, string(b))
	}
}

// changed returns the documents of after that are not in before, and
// how many of before are gone.
func changed(before, after []string) (added []string, gone int) {
	seen := map[string]int{}
	for _, d := range before {
		seen[d]++
	}
	for _, d := range after {
		if seen[d] > 0 {
			seen[d]--
			continue
		}
		added = append(added, d)
	}
	for _, n := range seen {
		gone += n
	}
	return added, gone
}

func TestChangePackageAddBundle(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.yaml"), filepath.Join(dir, "out", "op", "catalog.yaml")
	os.WriteFile(src, []byte(changeSrc), 0o644)
	what, err := imagebuild.ChangePackage(src, dst, imagebuild.AddBundle, 7)
	if err != nil {
		t.Fatal(err)
	}
	if what != "op: added bundle op.v1.0.3 to channel stable" {
		t.Errorf("what = %q", what)
	}
	added, gone := changed(docsOf(t, src), docsOf(t, dst))
	if gone != 1 || len(added) != 2 {
		t.Fatalf("want the stable channel changed and one bundle added; %d gone, added %q", gone, added)
	}
	if !strings.Contains(added[0], `{"name":"op.v1.0.3","replaces":"op.v1.0.2"}`) || !strings.Contains(added[0], `"name":"stable"`) {
		t.Errorf("channel: %s", added[0])
	}
	b := added[1]
	for _, want := range []string{`"name":"op.v1.0.3"`, `"version":"1.0.3"`, `"image":"quay.example/op/bundle@sha256:`, `{"image":"quay.example/op/bundle@sha256:`, `"quay.example/op/op:v1.0.2"`, `"kind":"Op"`} {
		if !strings.Contains(b, want) {
			t.Errorf("new bundle lacks %s: %s", want, b)
		}
	}
	if strings.Contains(b, "bundle:v1.0.2") {
		t.Errorf("new bundle keeps the head's image: %s", b)
	}
	// A taken version is skipped; another seq gives another image.
	again := filepath.Join(dir, "again.yaml")
	if what, err := imagebuild.ChangePackage(dst, again, imagebuild.AddBundle, 8); err != nil || what != "op: added bundle op.v1.0.4 to channel stable" {
		t.Fatalf("second change: %q, %v", what, err)
	}
}

func TestChangePackageTouchBundle(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.json"), filepath.Join(dir, "dst.json")
	docs := docsOf(t, writeTemp(t, changeSrc))
	os.WriteFile(src, []byte(strings.Join(docs, "\n")+"\n"), 0o644)
	// Bundle 2 (op.v1.0.1) and 3 have no olm.csv.metadata: the search
	// wraps to op.v0.9.0.
	what, err := imagebuild.ChangePackage(src, dst, imagebuild.TouchBundle, 2)
	if err != nil {
		t.Fatal(err)
	}
	if what != "op: bundle op.v0.9.0 createdAt 2027-01-01T00:02:00Z" {
		t.Errorf("what = %q", what)
	}
	raw, _ := os.ReadFile(dst)
	if raw[0] != '{' {
		t.Fatalf("a JSON source gives JSON: %.40s", raw)
	}
	added, gone := changed(docsOf(t, src), docsOf(t, dst))
	if gone != 1 || len(added) != 1 || !strings.Contains(added[0], `"createdAt":"2027-01-01T00:02:00Z"`) || !strings.Contains(added[0], `"displayName":"Op"`) {
		t.Fatalf("want one bundle with a new createdAt and its other metadata; %d gone, added %q", gone, added)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every package of the community catalog can be changed both ways, and
// the result is a valid catalog for opm.
func TestChangePackageCommunityValid(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: copies and renders the 13.9 MB shared catalog with opm")
	}
	opm := servers.Peer(t, "opm") // skips without the shared folder
	src := filepath.Join(servers.SharedDir(), "testdata", "fbc", "community-v4.21", "configs")
	for i, change := range []imagebuild.Change{imagebuild.AddBundle, imagebuild.TouchBundle} {
		dst := t.TempDir()
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dst, "*", "catalog.yaml"))
		if len(files) != 33 {
			t.Fatalf("%d package files", len(files))
		}
		for _, f := range files {
			os.Chmod(f, 0o644)
			if _, err := imagebuild.ChangePackage(f, f, change, i); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := servers.PeerCommand(context.Background(), t.TempDir(), opm, "validate", dst).CombinedOutput(); err != nil {
			t.Fatalf("opm validate after change %d: %v\n%s", change, err, out)
		}
	}
}
