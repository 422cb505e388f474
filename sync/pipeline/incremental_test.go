package pipeline_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// copyTree copies dir's regular files into a new temp dir.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// shapeJSON is the GraphQL shape stored with name's published content.
func (e *env) shapeJSON(name string) []byte {
	e.t.Helper()
	c, err := catalog.Open(context.Background(), e.store, name)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := c.GraphQLShape(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := s.Marshal()
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// shapeOfLines observes every line of a catalog.jsonl in order: the
// shape a sync must store.
func shapeOfLines(t *testing.T, all []byte) []byte {
	t.Helper()
	s := gqlshape.New()
	for _, line := range bytes.SplitAfter(all, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var o struct{ Schema string }
		if err := json.Unmarshal(line, &o); err != nil {
			t.Fatal(err)
		}
		s.Observe(o.Schema, line)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fullSync syncs image into a fresh store with a fresh pipeline: the
// full path, to compare an incremental sync with.
func (e *env) fullSync(image string) (pipeline.Result, []byte, error) {
	e.t.Helper()
	st, err := fs.New(e.t.TempDir())
	if err != nil {
		e.t.Fatal(err)
	}
	full := &env{t: e.t, store: st, reg: e.reg, proxy: e.proxy}
	full.pl = full.pipeline()
	res, err := full.sync("c", image)
	if err != nil {
		return res, nil, err
	}
	e.fullShape = full.shapeJSON("c")
	return res, full.all("c"), nil
}

// incremental pushes v1 then v2 under one tag, syncs both into e's
// store, and returns the second sync's result.
func (e *env) incremental(v1, v2 string) (string, pipeline.Result, error) {
	e.t.Helper()
	ref, _ := e.push("r/c:latest", imagebuild.FromDir(v1, "/configs"))
	if res, err := e.sync("c", ref); err != nil || res.Action != pipeline.ActionPublished || res.FilesReused != 0 {
		e.t.Fatalf("first sync: %+v %v", res, err)
	}
	e.push("r/c:latest", imagebuild.FromDir(v2, "/configs"))
	res, err := e.sync("c", ref)
	return ref, res, err
}

// One package changed: the other files are reused, and the result is
// byte for byte what a full sync of the same image publishes.
func TestIncrementalOnePackageChanged(t *testing.T) {
	for _, verify := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "verify"}[verify], func(t *testing.T) {
			e := newEnv(t, pipeline.WithVerifyReuse(verify))
			v1 := filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs")
			v2 := copyTree(t, v1)
			p := filepath.Join(v2, "aws-neuron-operator/catalog.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte("image: "), []byte("image: mirror.example/"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			ref, res, err := e.incremental(v1, v2)
			if err != nil || res.Action != pipeline.ActionPublished {
				t.Fatalf("second sync: %+v %v", res, err)
			}
			if res.Files != 3 || res.FilesReused != 2 {
				t.Fatalf("files %d, reused %d; want 3 and 2", res.Files, res.FilesReused)
			}
			got := e.all("c")
			full, want, err := e.fullSync(ref)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || sha256Hex(got) != full.Meta.SHA256 || res.Meta.Objects != full.Meta.Objects {
				t.Fatalf("incremental catalog differs from the full sync's (%d vs %d bytes)", len(got), len(want))
			}
			// Shared, not copied: the unchanged files' lines stay where the
			// first sync put them.
			if len(res.Meta.Extents) != 3 || res.Meta.SHA256 != "" {
				t.Fatalf("incremental content's extents %+v, sha256 %q; want 3 extents (shared, own, shared) and none", res.Meta.Extents, res.Meta.SHA256)
			}
			if !bytes.Equal(e.shapeJSON("c"), e.fullShape) || !bytes.Equal(e.fullShape, shapeOfLines(t, want)) {
				t.Fatalf("GraphQL shapes: incremental\n%s\nfull\n%s\nobserved line by line\n%s", e.shapeJSON("c"), e.fullShape, shapeOfLines(t, want))
			}
			if !bytes.Contains(got, []byte(`"image":"mirror.example/`)) {
				t.Fatal("the changed file's objects are missing")
			}
		})
	}
}

const pkgP = `---
schema: olm.package
name: p
defaultChannel: stable
---
schema: olm.channel
package: p
name: stable
entries:
- name: p.v1
- name: p.v2
  replaces: p.v1
`

const bundlesP = `---
schema: olm.bundle
name: p.v1
package: p
image: example/p:v1
properties:
- type: olm.package
  value: {packageName: p, version: 1.0.0}
---
schema: olm.bundle
name: p.v2
package: p
image: example/p:v2
properties:
- type: olm.package
  value: {packageName: p, version: 2.0.0}
`

// A changed file that makes the catalog invalid together with unchanged
// files is refused, with the very error a full sync gives, and what was
// published stays published. Each case changes b.yaml only; a.yaml (and
// c.yaml, package q) are reused.
func TestIncrementalCrossFileRules(t *testing.T) {
	bundleV1 := bundlesP[:strings.Index(bundlesP, "---\nschema: olm.bundle\nname: p.v2")]
	bundleV2 := strings.TrimPrefix(bundlesP, bundleV1)
	header, channel, _ := strings.Cut(pkgP, "---\nschema: olm.channel")
	channel = "---\nschema: olm.channel" + channel
	type files struct{ a, b1, b2 string }
	cases := map[string]files{
		"second olm.package of an existing name":                  {pkgP, bundlesP, bundlesP + "---\nschema: olm.package\nname: p\n"},
		"bundle a channel of an unchanged file needs, removed":    {pkgP, bundlesP, bundleV1},
		"second head in a channel of an unchanged file's package": {pkgP, bundlesP, bundlesP + "---\nschema: olm.channel\npackage: p\nname: fast\nentries:\n- name: p.v1\n- name: p.v2\n"},
		"bundle an unchanged file defines, defined again":         {pkgP, bundlesP, bundlesP + strings.Replace(bundleV2, "example/p:v2", "example/p:v2b", 1)},
		"channel for a package no file defines":                   {pkgP, bundlesP, bundlesP + "---\nschema: olm.channel\npackage: nope\nname: stable\nentries:\n- name: p.v1\n"},
		"default channel of an unchanged file's package removed":  {header, bundlesP + channel, bundlesP + strings.Replace(channel, "name: stable", "name: other", 1)},
	}
	e := newEnv(t)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			v1 := fbcDir(t, map[string]string{"a.yaml": c.a, "b.yaml": c.b1, "c.yaml": onePackage})
			v2 := fbcDir(t, map[string]string{"a.yaml": c.a, "b.yaml": c.b2, "c.yaml": onePackage})
			st, err := fs.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ce := &env{t: t, store: st, reg: e.reg, proxy: e.proxy}
			ce.pl = ce.pipeline(pipeline.WithVerifyReuse(true))
			ref, res, err := ce.incremental(v1, v2)
			var se *pipeline.Error
			if !errors.As(err, &se) || se.Reason != pipeline.ReasonInvalidCatalog {
				t.Fatalf("incremental sync: %+v, %v; want %s", res, err, pipeline.ReasonInvalidCatalog)
			}
			if res.FilesReused != 2 {
				t.Fatalf("%d files reused, want a.yaml and c.yaml", res.FilesReused)
			}
			_, _, fullErr := ce.fullSync(ref)
			if fullErr == nil || fullErr.Error() != err.Error() {
				t.Fatalf("incremental error\n%v\nfull sync's\n%v", err, fullErr)
			}
			ptr, _, err := catalog.Current(context.Background(), st, "c")
			if err != nil {
				t.Fatal(err)
			}
			meta, ok, err := catalog.HasContent(context.Background(), st, "c", ptr.Digest)
			if err != nil || !ok || meta.FilesSize == 0 {
				t.Fatalf("published content after the refusal: %+v %v %v", meta, ok, err)
			}
			// The refused content, ended before validation, is not kept.
			published, err := catalog.ContentKey("c", ptr.Digest)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := st.List(context.Background(), "catalogs/c/sha256-")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if path.Dir(k.Key) != path.Dir(published) {
					t.Errorf("the refused sync left %s", k.Key)
				}
			}
		})
	}
}

// contentFile is the path of a stored content file of catalog c in an fs
// store rooted at root.
func contentFile(t *testing.T, st storage.Store, root, file string) string {
	t.Helper()
	ptr, _, err := catalog.Current(context.Background(), st, "c")
	if err != nil {
		t.Fatal(err)
	}
	key, err := catalog.ContentKey("c", ptr.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.Dir(key), file)
}

// A damaged or missing file summary costs the speed-up, not the sync;
// reused bytes that no longer match their file (a store that changed
// under us, or a bug) are caught by the check mode.
func TestIncrementalDamagedEarlierContent(t *testing.T) {
	v1 := fbcDir(t, map[string]string{"a.yaml": pkgP, "b.yaml": bundlesP, "c.yaml": onePackage})
	v2 := fbcDir(t, map[string]string{"a.yaml": pkgP, "b.yaml": bundlesP, "c.yaml": strings.ReplaceAll(onePackage, "example/q:v1", "example/q:v1b")})
	cases := []struct {
		name   string
		damage func(t *testing.T, path func(string) string)
		reused int
		reason pipeline.Reason
	}{
		{"summary garbage", func(t *testing.T, path func(string) string) { write(t, path("files"), []byte{0x05, 1, 2, 3, 4, 5}) }, 0, ""},
		{"summary truncated", func(t *testing.T, path func(string) string) { truncate(t, path("files"), 40) }, 0, ""},
		{"summary missing", func(t *testing.T, path func(string) string) { remove(t, path("files")) }, 0, ""},
		{"reused bytes changed", func(t *testing.T, path func(string) string) {
			b, err := os.ReadFile(path("catalog.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, path("catalog.jsonl"), bytes.Replace(b, []byte("example/p:v1"), []byte("example/p:v9"), 1))
		}, 2, pipeline.ReasonInternal},
	}
	e := newEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			st, err := fs.New(root)
			if err != nil {
				t.Fatal(err)
			}
			ce := &env{t: t, store: st, reg: e.reg, proxy: e.proxy}
			ce.pl = ce.pipeline(pipeline.WithVerifyReuse(true))
			ref, _ := ce.push("r/c:latest", imagebuild.FromDir(v1, "/configs"))
			if _, err := ce.sync("c", ref); err != nil {
				t.Fatal(err)
			}
			c.damage(t, func(f string) string { return contentFile(t, st, root, f) })
			ce.push("r/c:latest", imagebuild.FromDir(v2, "/configs"))
			res, err := ce.sync("c", ref)
			if res.FilesReused != c.reused {
				t.Fatalf("%d files reused, want %d", res.FilesReused, c.reused)
			}
			if c.reason == "" {
				if err != nil {
					t.Fatalf("sync: %v", err)
				}
				_, want, err := ce.fullSync(ref)
				if err != nil || !bytes.Equal(ce.all("c"), want) {
					t.Fatalf("catalog differs from the full sync's (%v)", err)
				}
				return
			}
			var se *pipeline.Error
			if !errors.As(err, &se) || se.Reason != c.reason || !strings.Contains(err.Error(), "incremental check: b.yaml") {
				t.Fatalf("sync: %v; want %s naming b.yaml", err, c.reason)
			}
		})
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
