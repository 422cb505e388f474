package buildindex_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/catalogsync/catalogsync/sync/buildindex"
	"github.com/catalogsync/catalogsync/sync/fbc"
)

func repo(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../..")
}

func copyDir(t testing.TB, src string) string {
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func build(t *testing.T, dir string) (string, buildindex.Manifest) {
	out := filepath.Join(t.TempDir(), "catalogsync-index")
	m, err := buildindex.Build(context.Background(), dir, out)
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

func digest(t *testing.T, dir string) string {
	files, h, err := buildindex.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Sum(files)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The pre-built catalog.jsonl holds exactly what parsing the FBC yields,
// in walk order, and objects.jsonl describes each line.
func TestBuildAndReuse(t *testing.T) {
	dir := filepath.Join(repo(t), "testdata/fbc/community-v4.21-3pkgs/configs")
	out, m := build(t, dir)
	x, err := buildindex.Open(out, digest(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	files, _, _ := buildindex.Scan(context.Background(), dir)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Content))
		if err != nil {
			t.Fatal(err)
		}
		if err := fbc.Parse(bytes.NewReader(b), func(o fbc.Object) error { want.Write(o.Blob); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	n := 0
	if err := x.Objects(func(o buildindex.ObjectLine, line []byte) error {
		var po fbc.Object
		if err := fbc.Parse(bytes.NewReader(line), func(p fbc.Object) error { po = p; return nil }); err != nil {
			return err
		}
		if po.Schema != o.Schema || po.Package != o.Package || po.Name != o.Name {
			t.Fatalf("object %d: line says %s/%s/%s, objects.jsonl %+v", n, po.Schema, po.Package, po.Name, o)
		}
		got.Write(line)
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) || n != m.Objects || n == 0 || m.Packages != 3 {
		t.Fatalf("catalog differs (%d objects, manifest %+v)", n, m)
	}
	if _, err := x.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Any change to the FBC, including one hidden only by a new .indexignore
// rule being removed, changes the digest; ignored files do not.
func TestDigestFollowsPipelineView(t *testing.T) {
	dir := copyDir(t, filepath.Join(repo(t), "testdata/fbc/community-v4.21-3pkgs/configs"))
	d0 := digest(t, dir)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("not fbc"), 0o644)
	os.WriteFile(filepath.Join(dir, ".indexignore"), []byte("*.md\n"), 0o644)
	if d := digest(t, dir); d != d0 {
		t.Fatalf("an ignored file changed the digest")
	}
	os.WriteFile(filepath.Join(dir, ".indexignore"), []byte("# nothing\n"), 0o644)
	if d := digest(t, dir); d == d0 {
		t.Fatalf("an un-ignored file left the digest unchanged")
	}
}

func TestTamperedCatalogIsRejected(t *testing.T) {
	dir := filepath.Join(repo(t), "testdata/fbc/community-v4.21-3pkgs/configs")
	out, _ := build(t, dir)
	p := filepath.Join(out, buildindex.CatalogFile)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"olm.package"`), []byte(`"olm.packagf"`), 1), 0o644)
	if _, err := buildindex.Open(out, digest(t, dir)); !errors.Is(err, buildindex.ErrTampered) {
		t.Fatalf("tampered catalog.jsonl: %v", err)
	}
}

func TestStaleIndexIsRejected(t *testing.T) {
	dir := copyDir(t, filepath.Join(repo(t), "testdata/fbc/community-v4.21-3pkgs/configs"))
	out, _ := build(t, dir)
	entries, _ := os.ReadDir(dir)
	victim := filepath.Join(dir, entries[0].Name())
	if entries[0].IsDir() {
		sub, _ := os.ReadDir(victim)
		victim = filepath.Join(victim, sub[0].Name())
	}
	f, _ := os.OpenFile(victim, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n")
	f.Close()
	if _, err := buildindex.Open(out, digest(t, dir)); !errors.Is(err, buildindex.ErrStale) {
		t.Fatalf("changed FBC: %v", err)
	}
}

func TestBadIndexDir(t *testing.T) {
	if _, err := buildindex.Open(filepath.Join(t.TempDir(), "nope"), "sha256:00"); !errors.Is(err, buildindex.ErrBadIndex) {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestInvalidFBCIsNotIndexed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"schema":"olm.channel","package":"ghost","name":"stable","entries":[{"name":"ghost.v1"}]}`), 0o644)
	_, err := buildindex.Build(context.Background(), dir, filepath.Join(t.TempDir(), "out"))
	if !errors.Is(err, fbc.ErrInvalid) {
		t.Fatalf("invalid FBC: %v", err)
	}
}
