package pipeline_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// The content is written while the layer streams when files arrive in
// their final order, and after the pull otherwise; the bytes are the same
// either way.
func TestStreamedOrWrittenAfterPull(t *testing.T) {
	e := newEnv(t)
	other := `{"schema":"custom.thing","name":"x"}` + "\n"
	img := func(layers ...[]imagebuild.Entry) imagebuild.Image {
		im := imagebuild.Image{Labels: map[string]string{label: "/configs"}}
		for _, l := range layers {
			im.Layers = append(im.Layers, imagebuild.Layer{Entries: l})
		}
		return im
	}
	a := imagebuild.Entry{Name: "configs/a.json", Body: []byte(onePackage)}
	z := imagebuild.Entry{Name: "configs/z/other.json", Body: []byte(other)}
	cases := []struct {
		name     string
		img      imagebuild.Image
		streamed bool
	}{
		{"in walk order", img([]imagebuild.Entry{a, z}), true},
		{"directories first", img([]imagebuild.Entry{{Name: "configs/", Typeflag: tar.TypeDir}, a, {Name: "configs/z/", Typeflag: tar.TypeDir}, z}), true},
		{"out of order", img([]imagebuild.Entry{z, a}), false},
		{"a path twice", img([]imagebuild.Entry{a, z, {Name: "configs/z/other.json", Body: []byte(other)}}), false},
		{"a file ignored", img([]imagebuild.Entry{{Name: "configs/.indexignore", Body: []byte("b.json\n")}, a, {Name: "configs/b.json", Body: []byte(other)}, z}), false},
		{"the last file ignored", img([]imagebuild.Entry{{Name: "configs/.indexignore", Body: []byte("zz.json\n")}, a, z, {Name: "configs/zz.json", Body: []byte(other)}}), false},
		{"an ignored file that does not parse", img([]imagebuild.Entry{{Name: "configs/.indexignore", Body: []byte("b.json\n")}, a, {Name: "configs/b.json", Body: []byte("not a catalog")}, z}), false},
		{"an ignored file and a link", img([]imagebuild.Entry{{Name: "configs/.indexignore", Body: []byte("b.json\n")}, a, {Name: "configs/b.json", Body: []byte(other)}, {Name: "configs/y.json", Typeflag: tar.TypeSymlink, Linkname: "z/other.json"}, z}), false},
		{"a file then a link of its name", img([]imagebuild.Entry{a, {Name: "configs/y.json", Body: []byte(`{"schema":"custom.thing","name":"w"}`)}, {Name: "configs/y.json", Typeflag: tar.TypeSymlink, Linkname: "z/other.json"}, z}), false},
		{"a link", img([]imagebuild.Entry{a, {Name: "configs/y.json", Typeflag: tar.TypeSymlink, Linkname: "z/other.json"}, z}), false},
		// Layers are listed base first and read top first.
		{"later files in the lower layer", img([]imagebuild.Entry{z}, []imagebuild.Entry{a}), true},
		{"earlier files in the lower layer", img([]imagebuild.Entry{a}, []imagebuild.Entry{z}), false},
		{"a file in both layers", img([]imagebuild.Entry{{Name: "configs/a.json", Body: []byte("{}")}, z}, []imagebuild.Entry{a}), true},
	}
	want := map[bool]string{false: onePackageNormalized + `{"name":"x","schema":"custom.thing"}` + "\n"}
	want[true] = want[false]
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			slug := strings.ReplaceAll(c.name, " ", "-")
			ref, _ := e.push("stream/"+slug+":v1", c.img)
			res, err := e.sync("stream-"+slug, ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Meta.Stats["streamed"]; got != c.streamed {
				t.Errorf("streamed = %v, want %v", got, c.streamed)
			}
			// Either way the next sync can reuse the files.
			if res.Meta.FilesSize <= 0 {
				t.Errorf("no file summary stored (streamed %v)", c.streamed)
			}
			w := want[c.streamed]
			if strings.Contains(c.name, "a link") {
				w += `{"name":"x","schema":"custom.thing"}` + "\n"
			}
			if got := string(e.all(res.Catalog)); got != w {
				t.Fatalf("got\n%s\nwant\n%s", got, w)
			}
		})
	}
}

// meta.json says whether the content was written as the layer streamed:
// a one-layer image in walk order is.
func TestUnitStreamedStat(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := catalog.HasContent(context.Background(), st, "c", res.Digest)
	if err != nil || !ok {
		t.Fatalf("content of %s: %v %v", res.Digest, ok, err)
	}
	if m.Stats["streamed"] != true {
		t.Fatalf("stats %v, want streamed", m.Stats)
	}
}

// Once files arrive out of order the streamed write is dropped, and the
// streamer keeps taking files however many follow (its queue holds 1024):
// the layer is read to its end and the content written after the pull.
func TestUnitManyFilesAfterStreamingIsDropped(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	entries := []entry{{"configs/z.json", bigPackage("z", 1)}} // before a*: not walk order
	for i := range 1100 {
		entries = append(entries, entry{fmt.Sprintf("configs/a%04d.json", i), bigPackage(fmt.Sprintf("a%04d", i), 1)})
	}
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entries...)))
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1101 {
		t.Fatalf("%d files, want 1101", res.Files)
	}
}

// Lines of hundreds of KB go from the spool to the store a chunk at a
// time, as the layer streams and after the pull alike, also when a small
// line before one leaves its end in the spool's buffer: the content
// holds each whole, in place.
func TestUnitLargeLinesWhole(t *testing.T) {
	t.Parallel()
	thing := func(name string, n int) (string, string) {
		data := strings.Repeat("d", n)
		return fmt.Sprintf(`{"schema":"custom.thing","name":%q,"data":%q}`, name, data) + "\n",
			fmt.Sprintf(`{"data":%q,"name":%q,"schema":"custom.thing"}`, data, name) + "\n"
	}
	b, wantB := thing("b", 300<<10)
	c, wantC := thing("c", 1<<20)
	d, wantD := thing("d", 10)
	want := wantD + wantB + wantC + wantD
	for _, order := range []struct {
		name     string
		entries  []entry
		streamed bool
	}{
		{"in walk order", []entry{{"configs/b.json", d + b}, {"configs/c.json", c + d}}, true},
		{"out of order", []entry{{"configs/c.json", c + d}, {"configs/b.json", d + b}}, false},
	} {
		t.Run(order.name, func(t *testing.T) {
			src, st, pl := newUnit(t)
			src.tag("reg/c:v1", newImage(t, tarLayer(t, order.entries...)))
			res, err := runOnce(t, pl, "c", "reg/c:v1")
			if err != nil {
				t.Fatal(err)
			}
			cat, err := catalog.Open(context.Background(), st, "c")
			if err != nil {
				t.Fatal(err)
			}
			if cat.Meta.Stats["streamed"] != order.streamed {
				t.Fatalf("streamed %v, want %v", cat.Meta.Stats["streamed"], order.streamed)
			}
			rc, err := cat.All(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil || string(got) != want {
				t.Fatalf("content of %s: %d bytes (%v), want %d", res.Digest, len(got), err, len(want))
			}
		})
	}
}
