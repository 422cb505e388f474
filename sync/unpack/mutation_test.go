package unpack

// Tests written against the mutants that survived test/mutation.sh (see
// docs/testing.md): each names the bug it stands for.

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

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
