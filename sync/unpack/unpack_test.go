package unpack

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type ent struct {
	name, body, link string
	typ              byte
}

func layer(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// run feeds layers (given first to last) in reverse, as the pipeline does,
// and returns the final files with their contents.
func run(t *testing.T, dir string, lim Limits, layers ...[]byte) (map[string]string, []string, error) {
	t.Helper()
	u, err := New(dir, lim)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]string{}
	from := map[string]int{} // the layer that handed each file over
	for i := len(layers) - 1; i >= 0; i-- {
		err := u.Layer(bytes.NewReader(layers[i]), func(p string, size int64, r io.Reader) error {
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			// Again within a layer replaces; from a lower layer is wrong.
			if l, dup := from[p]; dup && l != i {
				t.Errorf("file %s handed over by layers %d and %d", p, l, i)
			}
			seen[p], from[p] = string(b), i
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	files, err := u.Files()
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	var order []string
	for _, f := range files {
		c, ok := seen[f.Content]
		if !ok {
			t.Fatalf("file %s has content of %s which was never handed over", f.Path, f.Content)
		}
		out[f.Path] = c
		order = append(order, f.Path)
	}
	return out, order, nil
}

func TestLayerSemantics(t *testing.T) {
	base := layer(t,
		ent{name: "bin/opm", body: "ELF"},
		ent{name: "configs/", typ: tar.TypeDir},
		ent{name: "configs/a/catalog.yaml", body: "a1"},
		ent{name: "configs/b/catalog.yaml", body: "b1"},
		ent{name: "configs/c/catalog.yaml", body: "c1"},
		ent{name: "configs/d/x.json", body: "d1"},
		ent{name: "configs/d/y.json", body: "d2"},
	)
	upper := layer(t,
		ent{name: "./configs/a/catalog.yaml", body: "a2"}, // replaced
		ent{name: "configs/b/.wh.catalog.yaml"},           // deleted
		ent{name: "configs/.wh.c"},                        // whole dir deleted
		ent{name: "configs/d/.wh..wh..opq"},               // opaque: lower d/* hidden
		ent{name: "configs/d/z.json", body: "d3"},         // but this layer's entries stay
	)
	got, order, err := run(t, "/configs", Limits{}, base, upper)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a/catalog.yaml": "a2", "d/z.json": "d3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !reflect.DeepEqual(order, []string{"a/catalog.yaml", "d/z.json"}) {
		t.Fatalf("order %v", order)
	}
}

// A layer holding a path twice leaves the later entry, as extracting it
// would; a lower layer's copy stays hidden.
func TestSamePathTwiceInOneLayer(t *testing.T) {
	lower := layer(t, ent{name: "configs/x.json", body: "lower"}, ent{name: "configs/y.json", body: "y-lower"})
	upper := layer(t,
		ent{name: "configs/x.json", body: "first"},
		ent{name: "configs/x.json", body: "last"},
		ent{name: "configs/y.json", body: "file"},
		ent{name: "configs/y.json", typ: tar.TypeSymlink, link: "x.json"},
	)
	got, _, err := run(t, "/configs", Limits{}, lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"x.json": "last", "y.json": "last"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWalkOrder(t *testing.T) {
	l := layer(t,
		ent{name: "configs/a.txt", body: "1"},
		ent{name: "configs/a/b.yaml", body: "2"},
		ent{name: "configs/B.yaml", body: "3"},
		ent{name: "configs/a-b/c.yaml", body: "4"},
	)
	_, order, err := run(t, "configs", Limits{}, l)
	if err != nil {
		t.Fatal(err)
	}
	// fs.WalkDir: entries sorted by name within each directory, depth first.
	want := []string{"B.yaml", "a/b.yaml", "a-b/c.yaml", "a.txt"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestIndexIgnore(t *testing.T) {
	l := layer(t,
		ent{name: "configs/.indexignore", body: "/expected_all.json\n# comment\n..*\n"},
		ent{name: "configs/catalog.yaml", body: "x"},
		ent{name: "configs/expected_all.json", body: "y"},
		ent{name: "configs/..hidden", body: "z"},
		ent{name: "configs/sub/.indexignore", body: "*.md\n!keep.md\n"},
		ent{name: "configs/sub/README.md", body: "r"},
		ent{name: "configs/sub/keep.md", body: "k"},
		ent{name: "configs/other/README.md", body: "o"},
	)
	got, _, err := run(t, "/configs", Limits{}, l)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"catalog.yaml": "x", "sub/keep.md": "k", "other/README.md": "o"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestLinksInside(t *testing.T) {
	l := layer(t,
		ent{name: "configs/real/catalog.yaml", body: "r"},
		ent{name: "configs/alias.yaml", typ: tar.TypeSymlink, link: "real/catalog.yaml"},
		ent{name: "configs/abs.yaml", typ: tar.TypeSymlink, link: "/configs/real/catalog.yaml"},
		ent{name: "configs/hard.yaml", typ: tar.TypeLink, link: "configs/real/catalog.yaml"},
	)
	got, _, err := run(t, "/configs", Limits{}, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"alias.yaml", "abs.yaml", "hard.yaml", "real/catalog.yaml"} {
		if got[p] != "r" {
			t.Errorf("%s = %q", p, got[p])
		}
	}
}

func TestUnsafe(t *testing.T) {
	cases := []struct {
		name string
		ents []ent
		want error
		msg  string
	}{
		{"dotdot", []ent{{name: "configs/../../x", body: "x"}}, ErrUnsafe, "configs/../../x"},
		{"absolute", []ent{{name: "/etc/passwd", body: "x"}}, ErrUnsafe, "absolute"},
		{"symlink out", []ent{{name: "configs/evil.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"}}, ErrUnsafe, "outside"},
		{"symlink climbing", []ent{{name: "configs/evil.yaml", typ: tar.TypeSymlink, link: "../../etc/shadow"}}, ErrUnsafe, "outside"},
		{"hardlink out", []ent{{name: "configs/h.yaml", typ: tar.TypeLink, link: "etc/passwd"}}, ErrUnsafe, "outside"},
		{"device", []ent{{name: "configs/dev", typ: tar.TypeChar}}, ErrUnsafe, "character device"},
		{"fifo", []ent{{name: "configs/p", typ: tar.TypeFifo}}, ErrUnsafe, "fifo"},
		{"dangling", []ent{{name: "configs/l.yaml", typ: tar.TypeSymlink, link: "missing.yaml"}}, ErrUnsafe, "not in the catalog"},
		{"link to dir", []ent{{name: "configs/d/", typ: tar.TypeDir}, {name: "configs/l", typ: tar.TypeSymlink, link: "d"}}, ErrUnsafe, "directory"},
		{"loop", []ent{{name: "configs/a", typ: tar.TypeSymlink, link: "b"}, {name: "configs/b", typ: tar.TypeSymlink, link: "a"}}, ErrUnsafe, "too many"},
		{"no configs", []ent{{name: "other/x", body: "x"}}, ErrNoConfigs, "/configs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := run(t, "/configs", Limits{}, layer(t, c.ents...))
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
}

// Devices and links outside the FBC directory belong to the base image and
// are none of our business.
func TestOutsideIgnored(t *testing.T) {
	l := layer(t,
		ent{name: "dev/null", typ: tar.TypeChar},
		ent{name: "etc/alt", typ: tar.TypeSymlink, link: "/usr/bin/x"},
		ent{name: "configs/c.yaml", body: "c"},
	)
	got, _, err := run(t, "/configs", Limits{}, l)
	if err != nil || got["c.yaml"] != "c" || len(got) != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestLimits(t *testing.T) {
	big := strings.Repeat("x", 4096)
	l := layer(t, ent{name: "configs/a", body: big}, ent{name: "configs/b", body: big})
	_, _, err := run(t, "configs", Limits{MaxBytes: 6000, MaxFileBytes: 1 << 20, MaxEntries: 10}, l)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 6000 uncompressed bytes") {
		t.Fatalf("bytes cap: %v", err)
	}
	// The total counts over layers, each under the cap on its own.
	la, lb := layer(t, ent{name: "configs/a", body: big}), layer(t, ent{name: "configs/b", body: big})
	_, _, err = run(t, "configs", Limits{MaxBytes: 6000, MaxFileBytes: 1 << 20, MaxEntries: 10}, la, lb)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 6000 uncompressed bytes") {
		t.Fatalf("bytes cap over two layers: %v", err)
	}
	if _, _, err := run(t, "configs", Limits{MaxBytes: 20000, MaxFileBytes: 1 << 20, MaxEntries: 10}, la, lb); err != nil {
		t.Fatalf("under the cap: %v", err)
	}
	_, _, err = run(t, "configs", Limits{MaxBytes: 1 << 20, MaxFileBytes: 100, MaxEntries: 10}, l)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "configs/a") {
		t.Fatalf("file cap: %v", err)
	}
	_, _, err = run(t, "configs", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 1}, l)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("entries cap: %v", err)
	}
}

func TestUpperFileHidesLowerDir(t *testing.T) {
	base := layer(t, ent{name: "configs/p/catalog.yaml", body: "old"}, ent{name: "configs/q.yaml", body: "q"})
	upper := layer(t, ent{name: "configs/p", body: "now a file"})
	got, _, err := run(t, "configs", Limits{}, base, upper)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"p": "now a file", "q.yaml": "q"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestRootWhiteoutHidesLower(t *testing.T) {
	base := layer(t, ent{name: "configs/old.yaml", body: "o"})
	upper := layer(t, ent{name: ".wh.configs"}, ent{name: "configs/new.yaml", body: "n"})
	got, _, err := run(t, "configs", Limits{}, base, upper)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"new.yaml": "n"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func FuzzLayer(f *testing.F) {
	tf := &testing.T{}
	f.Add(layer(tf, ent{name: "configs/a.yaml", body: "a"}, ent{name: "configs/.wh.b"}))
	f.Add(layer(tf, ent{name: "configs/l", typ: tar.TypeSymlink, link: "../x"}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, _ := New("/configs", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 1000})
		err := u.Layer(bytes.NewReader(data), func(p string, size int64, r io.Reader) error {
			if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
				t.Fatalf("unsafe path handed over: %q", p)
			}
			_, err := io.Copy(io.Discard, r)
			return err
		})
		if err != nil {
			return
		}
		files, err := u.Files()
		if err != nil {
			return
		}
		for _, f := range files {
			if strings.HasPrefix(f.Content, "/") || strings.Contains("/"+f.Content+"/", "/../") {
				t.Fatalf("unsafe content path %q", f.Content)
			}
		}
	})
}

// An empty catalog directory label, or one with a NUL, is refused: an
// empty one would make the whole image the catalog.
func TestNewRefusesBadLabel(t *testing.T) {
	for _, dir := range []string{"", "con\x00figs"} {
		if _, err := New(dir, Limits{}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("New(%q) = %v, want ErrUnsafe", dir, err)
		}
	}
	if _, err := New("configs", Limits{}); err != nil {
		t.Fatal(err)
	}
}

// A layer cut short is an error, not a layer that silently ends early.
func TestTruncatedLayer(t *testing.T) {
	l := layer(t, ent{name: "configs/a.yaml", body: strings.Repeat("a", 2000)})
	u, err := New("configs", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	err = u.Layer(bytes.NewReader(l[:1000]), func(string, int64, io.Reader) error { return nil })
	if err == nil || errors.Is(err, ErrLimit) {
		t.Fatalf("truncated layer: %v", err)
	}
}

// An entry for the image root itself ("./", as docker save writes) is
// skipped, and the rest of the layer is still read.
func TestRootEntryThenFiles(t *testing.T) {
	l := layer(t,
		ent{name: "./", typ: tar.TypeDir},
		ent{name: "./configs/", typ: tar.TypeDir},
		ent{name: "./configs/a.yaml", body: "a"},
	)
	got, _, err := run(t, "configs", Limits{}, l)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"a.yaml": "a"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// The .indexignore cap is 1 MiB exactly: 1 MiB is read whole (its last
// line still applies), one byte more is refused.
func TestIndexIgnoreCap(t *testing.T) {
	const mib = 1 << 20
	// Comment lines of 64 bytes (short: see docs/testing.md on long
	// lines), one shorter line, then the pattern that counts.
	ignore := func(size int) string {
		const last = "last.yaml\n"
		pad := size - len(last)
		short := ""
		if pad%64 > 0 {
			short = strings.Repeat("#", pad%64-1) + "\n"
		}
		return strings.Repeat(strings.Repeat("#", 63)+"\n", pad/64) + short + last
	}
	if n := len(ignore(mib)); n != mib {
		t.Fatalf("helper made %d bytes", n)
	}
	at := layer(t,
		ent{name: "configs/.indexignore", body: ignore(mib)},
		ent{name: "configs/last.yaml", body: "l"},
		ent{name: "configs/keep.yaml", body: "k"},
	)
	got, _, err := run(t, "configs", Limits{}, at)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"keep.yaml": "k"}) {
		t.Fatalf("1 MiB .indexignore: got %v, %v", got, err)
	}
	over := layer(t, ent{name: "configs/.indexignore", body: ignore(mib + 1)})
	if _, _, err := run(t, "configs", Limits{}, over); !errors.Is(err, ErrLimit) {
		t.Fatalf("1 MiB + 1 .indexignore: %v, want ErrLimit", err)
	}
}

// An error from the FileFunc (the pipeline's writer failing) stops the
// layer and comes back to the caller.
func TestFileFuncErrorReturned(t *testing.T) {
	boom := errors.New("disk full")
	u, err := New("configs", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l := layer(t, ent{name: "configs/a.yaml", body: "a"}, ent{name: "configs/b.yaml", body: "b"})
	calls := 0
	err = u.Layer(bytes.NewReader(l), func(string, int64, io.Reader) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err = %v after %d calls, want %v after 1", err, calls, boom)
	}
}

// Directory entries below the root are directories, not files nor links
// to directories.
func TestSubdirectoryEntries(t *testing.T) {
	l := layer(t,
		ent{name: "configs/", typ: tar.TypeDir},
		ent{name: "configs/pkg/", typ: tar.TypeDir},
		ent{name: "configs/pkg/catalog.yaml", body: "c"},
	)
	got, _, err := run(t, "configs", Limits{}, l)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"pkg/catalog.yaml": "c"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A file that a later entry of the same layer turned into a file's child
// is skipped, and the files after it in walk order are still returned.
func TestUnreachableSkippedNotFinal(t *testing.T) {
	l := layer(t,
		ent{name: "configs/p/x.yaml", body: "x"},
		ent{name: "configs/p", body: "p"},
		ent{name: "configs/q.yaml", body: "q"},
	)
	got, _, err := run(t, "configs", Limits{}, l)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"p": "p", "q.yaml": "q"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A link to an .indexignore file is skipped like one, and the files after
// it in walk order are still returned.
func TestLinkToIndexIgnore(t *testing.T) {
	l := layer(t,
		ent{name: "configs/.indexignore", body: "nothing\n"},
		ent{name: "configs/a", typ: tar.TypeSymlink, link: ".indexignore"},
		ent{name: "configs/b.yaml", body: "b"},
	)
	got, _, err := run(t, "configs", Limits{}, l)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"b.yaml": "b"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// Comment lines are not patterns: a file named like one is kept.
func TestIndexIgnoreCommentIsNoPattern(t *testing.T) {
	l := layer(t,
		ent{name: "configs/.indexignore", body: "#keep.yaml\n\ndrop.yaml\n"},
		ent{name: "configs/#keep.yaml", body: "k"},
		ent{name: "configs/drop.yaml", body: "d"},
	)
	got, _, err := run(t, "configs", Limits{}, l)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"#keep.yaml": "k"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// Links resolve through at most 16 hops: a chain of 15 links to a file
// resolves, one of 16 is refused.
func TestLinkHopLimit(t *testing.T) {
	chain := func(links int) []byte {
		ents := []ent{{name: "configs/file.yaml", body: "f"}}
		for i := range links {
			to := fmt.Sprintf("l%d", i+1)
			if i+1 == links {
				to = "file.yaml"
			}
			ents = append(ents, ent{name: fmt.Sprintf("configs/l%d", i), typ: tar.TypeSymlink, link: to})
		}
		return layer(t, ents...)
	}
	got, _, err := run(t, "configs", Limits{}, chain(15))
	if err != nil || got["l0"] != "f" {
		t.Fatalf("15 links: %v, %v", got["l0"], err)
	}
	if _, _, err := run(t, "configs", Limits{}, chain(16)); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("16 links: %v", err)
	}
}

// An opaque marker at the image root hides every lower layer, the catalog
// directory included.
func TestOpaqueImageRoot(t *testing.T) {
	base := layer(t, ent{name: "configs/old.yaml", body: "o"})
	upper := layer(t, ent{name: ".wh..wh..opq"}, ent{name: "configs/new.yaml", body: "n"})
	got, _, err := run(t, "configs", Limits{}, base, upper)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"new.yaml": "n"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// Directories merge across layers: an upper layer's directory entries
// (which most layers carry) do not hide the files of lower layers in them.
func TestDirectoriesMergeAcrossLayers(t *testing.T) {
	base := layer(t, ent{name: "configs/", typ: tar.TypeDir}, ent{name: "configs/pkg/", typ: tar.TypeDir},
		ent{name: "configs/pkg/old.yaml", body: "o"}, ent{name: "configs/top.yaml", body: "t"})
	upper := layer(t, ent{name: "configs/", typ: tar.TypeDir}, ent{name: "configs/pkg/", typ: tar.TypeDir},
		ent{name: "configs/pkg/new.yaml", body: "n"})
	got, _, err := run(t, "configs", Limits{}, base, upper)
	want := map[string]string{"pkg/old.yaml": "o", "pkg/new.yaml": "n", "top.yaml": "t"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// WalkCompare puts a directory before what is in it, as fs.WalkDir visits
// them (the node walk in Files depends on it for which error comes first).
func TestWalkCompareDirBeforeChildren(t *testing.T) {
	for _, c := range [][2]string{{"a", "a/0"}, {"a", "a/b/c"}, {"a/b", "a/b/0"}, {"a", "a.b"}, {"a/z", "a.b"}} {
		if WalkCompare(c[0], c[1]) >= 0 || WalkCompare(c[1], c[0]) <= 0 {
			t.Errorf("WalkCompare(%q, %q) = %d, reverse %d", c[0], c[1], WalkCompare(c[0], c[1]), WalkCompare(c[1], c[0]))
		}
	}
}

// TestIndexIgnoreLongLine: a line too long to scan is refused, not taken
// for the end of the file (the patterns after it would silently not
// apply, and a file the author excluded would be served).
func TestIndexIgnoreLongLine(t *testing.T) {
	long := "#" + strings.Repeat("x", 64<<10) + "\n"
	img := layer(t,
		ent{name: "configs/.indexignore", body: long + "secret.yaml\n"},
		ent{name: "configs/secret.yaml", body: "s"},
		ent{name: "configs/keep.yaml", body: "k"},
	)
	got, _, err := run(t, "configs", Limits{}, img)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), ".indexignore") {
		t.Fatalf("got %v, %v; want ErrLimit naming the .indexignore", got, err)
	}
	// Just under the scanner's limit, the line is a comment like any other.
	short := "#" + strings.Repeat("x", 60<<10) + "\n"
	img = layer(t,
		ent{name: "configs/.indexignore", body: short + "secret.yaml\n"},
		ent{name: "configs/secret.yaml", body: "s"},
		ent{name: "configs/keep.yaml", body: "k"},
	)
	if got, _, err := run(t, "configs", Limits{}, img); err != nil || !reflect.DeepEqual(got, map[string]string{"keep.yaml": "k"}) {
		t.Fatalf("long comment under the limit: got %v, %v", got, err)
	}
}

// TestLimitsAtTheBoundary: every cap admits exactly its value and refuses
// one more.
func TestLimitsAtTheBoundary(t *testing.T) {
	body := strings.Repeat("x", 1000)
	l := layer(t, ent{name: "configs/a", body: body}, ent{name: "configs/b", body: body}, ent{name: "configs/c", body: "y"})
	// Without its end-of-archive blocks the stream is read to its last
	// byte, so the cap is exact.
	l = l[:len(l)-1024]
	roomy := Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 100}
	for _, tc := range []struct {
		name     string
		at, over Limits
	}{
		{"bytes", Limits{MaxBytes: int64(len(l)), MaxFileBytes: 1 << 20, MaxEntries: 100},
			Limits{MaxBytes: int64(len(l)) - 1, MaxFileBytes: 1 << 20, MaxEntries: 100}},
		{"file bytes", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1000, MaxEntries: 100},
			Limits{MaxBytes: 1 << 20, MaxFileBytes: 999, MaxEntries: 100}},
		{"entries", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 3},
			Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 2}},
	} {
		if files, _, err := run(t, "configs", tc.at, l); err != nil || len(files) != 3 {
			t.Errorf("%s at the cap: %v (%d files)", tc.name, err, len(files))
		}
		if _, _, err := run(t, "configs", tc.over, l); !errors.Is(err, ErrLimit) {
			t.Errorf("%s one over the cap: %v", tc.name, err)
		}
	}
	if _, _, err := run(t, "configs", roomy, l); err != nil {
		t.Fatal(err)
	}
}

// TestWalkCompareIsWalkDir: WalkCompare orders any set of paths exactly as
// fs.WalkDir visits them on a real directory.
func TestWalkCompareIsWalkDir(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	parts := []string{"a", "a.b", "a-b", "ab", "B", "b", "a0", "z", "_", "a~"}
	for round := range 50 {
		dir := t.TempDir()
		var want []string
		for range 12 {
			depth := 1 + r.IntN(3)
			var segs []string
			for range depth {
				segs = append(segs, parts[r.IntN(len(parts))])
			}
			p := filepath.Join(segs...)
			// A file where a directory is needed, or the reverse: skip it.
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
				continue
			}
		}
		var got []string
		err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				want = append(want, p)
				got = append(got, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		slices.SortFunc(got, WalkCompare)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d:\n got %q\nwant %q", round, got, want)
		}
		for _, p := range want {
			if WalkCompare(p, p) != 0 {
				t.Fatalf("%q does not equal itself", p)
			}
		}
	}
}
