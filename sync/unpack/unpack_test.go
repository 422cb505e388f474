package unpack

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"reflect"
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
