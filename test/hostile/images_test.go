package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	digest "github.com/opencontainers/go-digest"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// imageCase is one hostile image pushed to the catalog's tag.
type imageCase struct {
	name string
	// push builds and pushes the image and returns its digest.
	push func(t *testing.T, e *env) string
	// targets are host paths that hostile entries aim at; none may exist.
	targets func(e *env) []string

	// accepted: the image is a valid catalog by operator-registry's rules
	// and is published (check says what it holds). Otherwise the sync
	// fails with reason and a message holding every one of msg.
	accepted bool
	reason   string
	msg      []string
	check    func(t *testing.T, e *env)

	// maxSync bounds the sync's duration; maxPeak serve's peak RSS
	// during it (when the kernel lets the peak be reset).
	maxSync time.Duration
	maxPeak int64
}

// Sizes of the big inputs. They are chosen to cross every cap
// catalogsync has (8 GiB uncompressed per image, 1 GiB per FBC file, 1 MiB
// after a layer's tar archive) while costing little to build and push.
const (
	bombInFBC     = 2 << 30 // one FBC file: 2 GiB of zeros in ~2 MB of gzip
	bombOutside   = 9 << 30 // outside the FBC dir: 9 GiB of zeros in ~10 MB
	bombNotTar    = 4 << 30 // no tar at all: 4 GiB of zeros in ~4 MB
	manyFiles     = 100_000
	hugeLineBytes = 24 << 20
	deepLevels    = 100_000
)

func pushImage(t *testing.T, e *env, img imagebuild.Image) string {
	t.Helper()
	d, err := imagebuild.Push(context.Background(), e.rc, e.ref, img)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// withTiny pushes the tiny good catalog plus entries under its layer.
func withTiny(entries ...imagebuild.Entry) func(*testing.T, *env) string {
	return func(t *testing.T, e *env) string {
		return pushImage(t, e, imagebuild.Image{
			Layers: []imagebuild.Layer{e.tinyLayer(entries...)},
			Labels: map[string]string{imagebuild.ConfigsLabel: "/configs"},
		})
	}
}

// bomb pushes the tiny catalog with a gzip bomb layer on top of it (read
// first: layers are read last to first).
func bomb(prefix func(t *testing.T) []byte, zeros int64) func(*testing.T, *env) string {
	return func(t *testing.T, e *env) string {
		p := prefix(t)
		blob := gzipBomb(t, p, zeros)
		t.Logf("bomb: %d bytes of gzip for %d bytes of content (ratio %.0f)", len(blob), int64(len(p))+zeros, float64(int64(len(p))+zeros)/float64(len(blob)))
		// The config's diff ID would need a hash of all the content:
		// nothing checks it, so the bomb claims a made-up one.
		return pushLayers(t, e, rawLayer{mediaType: gzipTar, blob: blob, diffID: digest.Digest("sha256:" + strings.Repeat("0", 64))})
	}
}

const gzipTar = "application/vnd.oci.image.layer.v1.tar+gzip"

// pushLayers pushes the tiny catalog's layer under layers.
func pushLayers(t *testing.T, e *env, layers ...rawLayer) string {
	t.Helper()
	d, err := pushRaw(context.Background(), e.rc, e.ref, map[string]string{imagebuild.ConfigsLabel: "/configs"},
		append([]rawLayer{buildLayer(t, e.tinyLayer())}, layers...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inSentinel is an absolute host path in the sentinel dir.
func (e *env) inSentinel(name string) string { return filepath.Join(e.sentinel, name) }

// climb is a relative path that reaches the absolute path p from any
// directory less than 32 levels deep.
func climb(p string) string { return strings.Repeat("../", 32) + strings.TrimPrefix(p, "/") }

func file(name, body string) imagebuild.Entry {
	return imagebuild.Entry{Name: name, Body: []byte(body)}
}

func imageCases() []imageCase {
	cwd, _ := os.Getwd() // serve's working directory too
	return []imageCase{
		{
			name: "path-traversal-dotdot",
			push: withTiny(file("../escaped-dotdot.json", `{"schema":"acme.x","name":"x"}`)),
			targets: func(e *env) []string {
				return []string{e.inSentinel("escaped-dotdot.json"), filepath.Join(cwd, "..", "escaped-dotdot.json")}
			},
			reason: "UnsafeImage",
			msg:    []string{`unsafe layer entry: "../escaped-dotdot.json": path climbs out with a ".." element`},
		},
		{
			name: "path-traversal-deep-dotdot-in-fbc-dir",
			push: func(t *testing.T, e *env) string {
				return withTiny(file("configs/"+climb(e.inSentinel("escaped-deep.json")), `{"schema":"acme.x","name":"x"}`))(t, e)
			},
			targets: func(e *env) []string { return []string{e.inSentinel("escaped-deep.json")} },
			reason:  "UnsafeImage",
			msg:     []string{`unsafe layer entry: "configs/../../`, `escaped-deep.json": path climbs out with a ".." element`},
		},
		{
			name: "path-traversal-absolute-name",
			push: func(t *testing.T, e *env) string {
				return withTiny(file(e.inSentinel("escaped-abs.json"), `{"schema":"acme.x","name":"x"}`))(t, e)
			},
			targets: func(e *env) []string { return []string{e.inSentinel("escaped-abs.json")} },
			reason:  "UnsafeImage",
			msg:     []string{`escaped-abs.json": absolute path`},
		},
		{
			name: "symlink-escape-to-host-file",
			push: func(t *testing.T, e *env) string {
				return withTiny(imagebuild.Entry{Name: "configs/leak.json", Typeflag: tar.TypeSymlink, Linkname: e.secret})(t, e)
			},
			reason: "UnsafeImage",
			msg:    []string{`unsafe layer entry: "configs/leak.json" links to "/`, `secret.json", outside /configs`},
		},
		{
			name: "symlink-escape-dir-then-write-through-it",
			push: func(t *testing.T, e *env) string {
				return withTiny(
					imagebuild.Entry{Name: "configs/sub", Typeflag: tar.TypeSymlink, Linkname: climb(e.sentinel)},
					file("configs/sub/escaped-through-link.json", `{"schema":"acme.x","name":"x"}`),
				)(t, e)
			},
			targets: func(e *env) []string { return []string{e.inSentinel("escaped-through-link.json")} },
			reason:  "UnsafeImage",
			msg:     []string{`unsafe layer entry: "configs/sub" links to "../../`, `outside /configs`},
		},
		{
			name: "symlink-loop",
			push: withTiny(
				imagebuild.Entry{Name: "configs/a.json", Typeflag: tar.TypeSymlink, Linkname: "b.json"},
				imagebuild.Entry{Name: "configs/b.json", Typeflag: tar.TypeSymlink, Linkname: "a.json"},
			),
			reason: "UnsafeImage",
			msg:    []string{`unsafe layer entry: "/configs/a.json": too many levels of links`},
		},
		{
			name: "hardlink-escape-to-host-file",
			push: func(t *testing.T, e *env) string {
				return withTiny(imagebuild.Entry{Name: "configs/hard.json", Typeflag: tar.TypeLink, Linkname: e.secret})(t, e)
			},
			reason: "UnsafeImage",
			msg:    []string{`unsafe layer entry: "configs/hard.json" hard-links to "/`, `secret.json", outside /configs`},
		},
		{
			name:   "hardlink-escape-outside-fbc-dir",
			push:   withTiny(imagebuild.Entry{Name: "configs/passwd.json", Typeflag: tar.TypeLink, Linkname: "etc/passwd"}),
			reason: "UnsafeImage",
			msg:    []string{`"configs/passwd.json" hard-links to "etc/passwd", outside /configs`},
		},
		{
			name:   "char-device",
			push:   withTiny(imagebuild.Entry{Name: "configs/null.json", Typeflag: tar.TypeChar}),
			reason: "UnsafeImage",
			msg:    []string{`"configs/null.json" is a character device, not a file`},
		},
		{
			name:   "block-device",
			push:   withTiny(imagebuild.Entry{Name: "configs/sda.json", Typeflag: tar.TypeBlock}),
			reason: "UnsafeImage",
			msg:    []string{`"configs/sda.json" is a block device, not a file`},
		},
		{
			name:   "fifo",
			push:   withTiny(imagebuild.Entry{Name: "configs/fifo.json", Typeflag: tar.TypeFifo}),
			reason: "UnsafeImage",
			msg:    []string{`"configs/fifo.json" is a fifo, not a file`},
		},
		{
			name: "label-climbs-out",
			push: func(t *testing.T, e *env) string {
				return pushImage(t, e, imagebuild.Image{
					Layers: []imagebuild.Layer{e.tinyLayer()},
					Labels: map[string]string{imagebuild.ConfigsLabel: "../../../../etc"},
				})
			},
			reason: "UnsafeImage",
			msg:    []string{`catalog directory not found in image: /etc`},
		},
		{
			name:   "gzip-bomb-fbc-file",
			push:   bomb(func(t *testing.T) []byte { return tarHeader(t, "configs/bomb.json", bombInFBC) }, tarFileOfZeros(bombInFBC)),
			reason: "ImageTooLarge",
			msg:    []string{fmt.Sprintf(`layer exceeds limit: "configs/bomb.json" is %d bytes (limit %d)`, bombInFBC, 1<<30)},
			// Refused from the tar header: nothing is inflated.
			maxSync: 5 * time.Second,
			maxPeak: 256 << 20,
		},
		{
			name:   "gzip-bomb-outside-fbc-dir",
			push:   bomb(func(t *testing.T) []byte { return tarHeader(t, "var/cache/zeros", bombOutside) }, tarFileOfZeros(bombOutside)),
			reason: "ImageTooLarge",
			msg:    []string{`layer exceeds limit: more than 8589934592 uncompressed bytes`},
			// 8 GiB are inflated and thrown away, in a streaming pass.
			maxSync: 45 * time.Second,
			maxPeak: 256 << 20,
		},
		{
			name:    "gzip-bomb-not-a-tar",
			push:    bomb(func(*testing.T) []byte { return nil }, bombNotTar),
			reason:  "NotCatalogImage",
			msg:     []string{`unsupported layer compression: more than 1048576 bytes after the tar archive`},
			maxSync: 5 * time.Second,
			maxPeak: 256 << 20,
		},
		{
			name: "tar-entry-longer-than-layer",
			push: func(t *testing.T, e *env) string {
				// The header promises 3000 bytes; 100 follow, then the
				// stream ends (a well-formed gzip of a truncated tar).
				tr := append(tarHeader(t, "configs/trunc.json", 3000), bytes.Repeat([]byte(" "), 100)...)
				return pushLayers(t, e, rawLayer{mediaType: gzipTar, blob: gzipBytes(t, tr), diffID: digest.FromBytes(tr)})
			},
			// Read errors other than caps, unsafe entries and compression
			// mismatches are taken for transfer trouble: a retryable
			// RegistryError, retried with backoff (see the doc).
			reason: "RegistryError",
			msg:    []string{`read trunc.json: unexpected EOF`},
		},
		{
			name: "gzip-bad-checksum",
			push: func(t *testing.T, e *env) string {
				l := buildLayer(t, e.tinyLayer(file("configs/more.json", `{"schema":"acme.x","name":"x"}`)))
				l.blob[len(l.blob)-8] ^= 0xff // the CRC-32 in the gzip trailer
				return pushLayers(t, e, l)
			},
			reason: "RegistryError",
			msg:    []string{`gzip: invalid checksum`},
		},
		{
			name: "media-type-lies",
			push: func(t *testing.T, e *env) string {
				l := e.tinyLayer()
				l.Compression = imagebuild.Zstd
				rl := buildLayer(t, l)
				rl.mediaType = gzipTar
				return pushLayers(t, e, rl)
			},
			// Terminal: pulling the same blob again cannot help.
			reason: "NotCatalogImage",
			msg:    []string{`unsupported layer compression: media type application/vnd.oci.image.layer.v1.tar+gzip but zstd data`},
		},
		{
			name: "same-path-twice-in-one-layer",
			push: withTiny(
				file("configs/twice.json", `{"schema":"acme.twice","name":"first"}`+"\n"),
				file("configs/twice.json", `{"schema":"acme.twice","name":"last"}`+"\n"),
			),
			// Extracting the layer (tar -x, containerd's archive.Apply,
			// which catalogd uses) leaves the last entry for a path, and so
			// does catalogsync.
			accepted: true,
			check: func(t *testing.T, e *env) {
				got := string(e.metas(t, "schema=acme.twice"))
				if got != `{"name":"last","schema":"acme.twice"}`+"\n" {
					t.Errorf("served %q, want the last entry", got)
				}
			},
		},
		{
			name: "100k-tiny-files",
			push: func(t *testing.T, e *env) string {
				entries := make([]imagebuild.Entry, manyFiles)
				for i := range entries {
					entries[i] = file(fmt.Sprintf("configs/many/n%06d.json", i), fmt.Sprintf(`{"schema":"acme.note","name":"n%06d"}`+"\n", i))
				}
				return withTiny(entries...)(t, e)
			},
			// 100k entries are far below the 2,000,000-entry cap, and
			// every file is a valid FBC file: this is a (silly but) valid
			// catalog, so it is published.
			accepted: true,
			check: func(t *testing.T, e *env) {
				b := e.metas(t, "schema=acme.note")
				if n := bytes.Count(b, []byte("\n")); n != manyFiles {
					t.Errorf("served %d acme.note objects, want %d", n, manyFiles)
				}
				if !bytes.HasPrefix(b, []byte(`{"name":"n000000","schema":"acme.note"}`+"\n")) {
					t.Errorf("first note: %.100q", b)
				}
			},
			maxSync: 90 * time.Second,
			maxPeak: 512 << 20,
		},
		{
			name: "huge-single-json-line",
			push: withTiny(file("configs/huge.json", hugeObject(true))),
			// One 24 MiB object on one line is valid JSON and a valid FBC
			// object (json.Decoder has no line limit), so it is published.
			accepted: true,
			check: func(t *testing.T, e *env) {
				want := `{"data":"` + strings.Repeat("a", hugeLineBytes) + `","name":"huge","schema":"acme.huge"}` + "\n"
				if got := e.metas(t, "schema=acme.huge"); string(got) != want {
					t.Errorf("served huge object: %d bytes, want %d", len(got), len(want))
				}
			},
			maxSync: 30 * time.Second,
			maxPeak: 512 << 20,
		},
		{
			name:    "huge-single-json-line-unterminated",
			push:    withTiny(file("configs/huge.json", hugeObject(false))),
			reason:  "InvalidCatalog",
			msg:     []string{`huge.json: invalid catalog: document 0 (line 1): unexpected end of JSON input`},
			maxSync: 30 * time.Second,
			maxPeak: 512 << 20,
		},
		{
			// Over the 64 MiB document cap: refused once the cap is
			// reached, before the rest is read.
			name:    "json-line-over-the-document-cap",
			push:    withTiny(file("configs/huge.json", hugeObjectOf(80<<20, true))),
			reason:  "InvalidCatalog",
			msg:     []string{`huge.json: invalid catalog: a document is larger than 67108864 bytes`},
			maxSync: 30 * time.Second,
			maxPeak: 512 << 20,
		},
		{
			name: "deeply-nested-json",
			push: withTiny(file("configs/deep.json",
				`{"schema":"acme.deep","name":"deep","x":`+strings.Repeat("[", deepLevels)+strings.Repeat("]", deepLevels)+"}\n")),
			reason:  "InvalidCatalog",
			msg:     []string{`deep.json: invalid catalog: document 0 (line 1): exceeded max depth (as YAML: yaml: exceeded max depth of 10000)`},
			maxSync: 10 * time.Second,
		},
		{
			name: "invalid-utf8-in-json",
			push: withTiny(file("configs/utf8.json", "{\"schema\":\"acme.utf8\",\"name\":\"bad-\xff\xfe\",\"v\":\"\xc3\x28\"}\n")),
			// json.Unmarshal, which operator-registry decodes with,
			// replaces invalid UTF-8 with U+FFFD: accepted, and what is
			// served is valid UTF-8.
			accepted: true,
			check: func(t *testing.T, e *env) {
				want := "{\"name\":\"bad-\uFFFD\uFFFD\",\"schema\":\"acme.utf8\",\"v\":\"\uFFFD(\"}\n"
				if got := e.metas(t, "schema=acme.utf8"); string(got) != want {
					t.Errorf("served %q, want %q", got, want)
				}
				if all := e.all(t); !utf8.Valid(all) {
					t.Error("the served catalog is not valid UTF-8")
				}
			},
		},
		{
			name:   "invalid-utf8-in-yaml",
			push:   withTiny(file("configs/utf8.yaml", "schema: acme.utf8\nname: bad-\xff\xfe\n")),
			reason: "InvalidCatalog",
			msg:    []string{`utf8.yaml: invalid catalog: document 0 (line 1): yaml: invalid leading UTF-8 octet`},
		},
		{
			name: "duplicate-keys",
			push: withTiny(
				file("configs/dup.json", `{"schema":"acme.dup","name":"dup-json","x":1,"x":2}`+"\n"+
					`{"schema":"olm.package","name":"not-a-package","schema":"acme.dup"}`+"\n"),
				file("configs/dup.yaml", "schema: acme.dup\nname: dup-yaml\nx: 1\nx: 2\n"),
			),
			// operator-registry decodes JSON with json.Unmarshal and YAML
			// with yaml.v2 (non-strict): the last value wins, in both.
			accepted: true,
			check: func(t *testing.T, e *env) {
				want := `{"name":"dup-json","schema":"acme.dup","x":2}` + "\n" +
					`{"name":"not-a-package","schema":"acme.dup"}` + "\n" +
					`{"name":"dup-yaml","schema":"acme.dup","x":2}` + "\n"
				if got := e.metas(t, "schema=acme.dup"); string(got) != want {
					t.Errorf("served %q, want %q", got, want)
				}
				if got := e.metas(t, "schema=olm.package&name=not-a-package"); len(got) != 0 {
					t.Errorf("the overridden schema key still made a package: %q", got)
				}
			},
		},
		{
			name: "missing-index-label",
			push: func(t *testing.T, e *env) string {
				return pushImage(t, e, imagebuild.Image{Layers: []imagebuild.Layer{e.tinyLayer()}})
			},
			reason: "MissingCatalogLabel",
			msg:    []string{`image has no catalog label operators.operatorframework.io.index.configs.v1`},
		},
		{
			name:   "malformed-yaml",
			push:   withTiny(file("configs/bad.yaml", "schema: olm.package\nname: [unclosed\n")),
			reason: "InvalidCatalog",
			msg:    []string{`bad.yaml: invalid catalog: document 0 (line 1): yaml: line 2: did not find expected ',' or ']'`},
		},
	}
}

// hugeObject is one FBC object of hugeLineBytes on a single line, with
// its closing quote, brace and newline or without.
func hugeObject(terminated bool) string { return hugeObjectOf(hugeLineBytes, terminated) }

func hugeObjectOf(n int, terminated bool) string {
	s := `{"schema":"acme.huge","name":"huge","data":"` + strings.Repeat("a", n)
	if terminated {
		s += "\"}\n"
	}
	return s
}

// metas is GET /catalogs/hostile/api/v1/metas?query.
func (e *env) metas(t *testing.T, query string) []byte {
	t.Helper()
	code, b := e.get(t, "/catalogs/"+catalogName+"/api/v1/metas?"+query)
	if code != http.StatusOK {
		t.Fatalf("GET metas?%s: %d %.200s", query, code, b)
	}
	return b
}

// runImage pushes one hostile image to the tag of the published good
// catalog, waits for the sync the registry's notification starts, checks
// its outcome and the invariants, then moves the tag back to the good
// image and checks the good catalog is served again.
func runImage(t *testing.T, e *env, c imageCase) {
	peakReset := e.resetPeak()
	start := time.Now()
	d := c.push(t, e)
	pushed := time.Since(start)
	op := e.waitOp(t, d, 2*time.Minute)
	took := time.Duration(0)
	if op.DurationSeconds != nil {
		took = time.Duration(*op.DurationSeconds * float64(time.Second))
	}
	peak := e.peakRSS()
	e.worstPeak = max(e.worstPeak, peak)

	var outcome string
	if c.accepted {
		if op.State != "Succeeded" || op.Result == nil || op.Result.Action != "Published" {
			t.Fatalf("want the image published, got %s: %+v", op.State, op.Error)
		}
		outcome = fmt.Sprintf("published, %d objects", op.Result.Objects)
		c.check(t, e)
	} else {
		if op.State != "Failed" || op.Error == nil {
			t.Fatalf("want the sync to fail, got %s: %+v", op.State, op.Result)
		}
		outcome = fmt.Sprintf("%s (%s, retryable=%v): %s", op.Error.Reason, op.Error.Phase, op.Error.Retryable, op.Error.Message)
		if op.Error.Reason != c.reason {
			t.Errorf("reason %s, want %s (%s)", op.Error.Reason, c.reason, op.Error.Message)
		}
		for _, m := range c.msg {
			if !strings.Contains(op.Error.Message, m) {
				t.Errorf("error message %q\ndoes not say %q", op.Error.Message, m)
			}
		}
		e.previous(t)
	}
	e.alive(t)
	var targets []string
	if c.targets != nil {
		targets = c.targets(e)
	}
	e.contained(t, targets...)
	if c.maxSync > 0 && took > c.maxSync {
		t.Errorf("sync took %v, want at most %v", took, c.maxSync)
	}
	peakNote := mib(peak)
	if !peakReset {
		peakNote += " (process lifetime peak)"
	} else if c.maxPeak > 0 && peak > c.maxPeak {
		t.Errorf("serve's peak RSS during the sync was %s, want at most %s", mib(peak), mib(c.maxPeak))
	}
	t.Logf("RESULT %s | %s | build+push %v, sync %v, serve peak RSS %s", c.name, outcome,
		pushed.Round(time.Millisecond), took.Round(time.Millisecond), peakNote)

	// The tag goes back to the good image: the catalog is served as before.
	d = pushImage(t, e, e.goodImage())
	if d != e.goodDigest {
		t.Fatalf("good image digest %s, was %s", d, e.goodDigest)
	}
	op = e.waitOp(t, d, time.Minute)
	if op.State != "Succeeded" {
		t.Fatalf("back to the good image: %s %+v", op.State, op.Error)
	}
	e.previous(t)
	e.contained(t)
}
