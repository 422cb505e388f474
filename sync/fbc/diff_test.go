package fbc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type parseResult struct {
	objs []string // "schema|package|name|blob"
	err  error
}

func (r parseResult) String() string {
	var b strings.Builder
	for _, o := range r.objs {
		b.WriteString(o)
	}
	fmt.Fprintf(&b, "err=%v", r.err)
	return b.String()
}

func collect(objs *[]string) func(Object) error {
	return func(o Object) error {
		*objs = append(*objs, o.Schema+"|"+o.Package+"|"+o.Name+"|"+string(o.Blob))
		return nil
	}
}

func runReference(data []byte) parseResult {
	var r parseResult
	r.err = parseReference(bytes.NewReader(data), collect(&r.objs))
	return r
}

// runFast parses with the fast path (or only the yaml.v2 fallback) and
// reports whether the reference result depends on map order.
func runFast(data []byte, noFast bool, chunk int) (parseResult, bool) {
	var r parseResult
	p := parser{fn: collect(&r.objs), noFast: noFast}
	var rd interface{ Read([]byte) (int, error) } = bytes.NewReader(data)
	if chunk > 0 {
		rd = &chunkReader{data: data, n: chunk}
	}
	r.err = p.run(rd)
	return r, p.ambiguous > 0
}

// chunkReader returns at most n bytes per Read, to exercise refills.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// sameResult compares the fast path against the reference: the same
// objects in the same order and the same error/no-error outcome.
func sameResult(t testing.TB, name string, data []byte, noFast bool, chunk int) {
	t.Helper()
	sameAs(t, name, data, runReference(data), noFast, chunk)
}

// sameAs is sameResult with the reference result computed by the caller.
func sameAs(t testing.TB, name string, data []byte, want parseResult, noFast bool, chunk int) {
	t.Helper()
	got, ambiguous := runFast(data, noFast, chunk)
	if ambiguous {
		return
	}
	if (want.err == nil) != (got.err == nil) || len(want.objs) != len(got.objs) {
		t.Fatalf("%s (noFast=%v chunk=%d): input %q\nreference: %s\nfast:      %s", name, noFast, chunk, data, want, got)
	}
	for i := range want.objs {
		if want.objs[i] != got.objs[i] {
			t.Fatalf("%s (noFast=%v chunk=%d): object %d differs for input %q\nreference: %q\nfast:      %q", name, noFast, chunk, i, data, want.objs[i], got.objs[i])
		}
	}
}

// diffAllPaths compares every parsing path with one reference result:
// the reference parse of a deeply nested input takes seconds.
func diffAllPaths(t testing.TB, name string, data []byte) {
	t.Helper()
	want := runReference(data)
	sameAs(t, name, data, want, false, 0)
	sameAs(t, name, data, want, true, 0)
	sameAs(t, name, data, want, false, 7)
}

const sharedFBC = "../../../shared/testdata/fbc"

// useShared reports whether tests run on the shared catalogs too: they
// are present and this is not -short (the largest takes seconds to parse).
func useShared(t testing.TB) bool {
	t.Helper()
	if _, err := os.Stat(sharedFBC); err != nil {
		return false
	}
	if testing.Short() {
		t.Logf("-short: %s not used", sharedFBC)
		return false
	}
	return true
}

func catalogFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ".indexignore" && d.Name() != "expected_all.json" && !strings.HasPrefix(d.Name(), "LICENSE") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDifferentialCatalogs(t *testing.T) {
	dirs := []string{"../../testdata/fbc/tiny/configs", "../../testdata/fbc/community-v4.21-3pkgs/configs"}
	if useShared(t) {
		dirs = append(dirs, sharedFBC+"/community-v4.21/configs", sharedFBC+"/tiny/configs")
	} else {
		t.Logf("%s not used: differential test runs on the bundled fixtures only", sharedFBC)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		for _, f := range catalogFiles(t, dir) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := runReference(data)
			if want.err != nil {
				t.Fatalf("%s: reference failed: %v", f, want.err)
			}
			sameAs(t, f, data, want, false, 0)
			sameAs(t, f, data, want, true, 0)
			sameAs(t, f, data, want, false, 4093)
			// The same catalog as a JSON stream (what catalogd serves).
			var stream []byte
			for _, o := range want.objs {
				stream = append(stream, o[strings.LastIndex(o, "|")+1:]...)
			}
			wantJSON := runReference(stream)
			sameAs(t, f+" as JSON", stream, wantJSON, false, 0)
			sameAs(t, f+" as JSON", stream, wantJSON, false, 4093)
		}
	}
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
