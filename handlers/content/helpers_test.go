package content

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

func digestOf(v any) string {
	sum := sha256.Sum256(fmt.Append(nil, v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// object is one catalog line and the fields /metas matches it by.
type object struct {
	schema, pkg, name string
	line              []byte
}

func (o object) matches(q catalog.Query) bool {
	return (q.Schema == "" || q.Schema == o.schema) &&
		(q.Package == "" || q.Package == o.pkg) &&
		(q.Name == "" || q.Name == o.name)
}

// objectOf reads the top-level schema, package and name of a JSON line.
func objectOf(t testing.TB, line []byte) object {
	t.Helper()
	var f struct{ Schema, Package, Name string }
	if err := json.Unmarshal(line, &f); err != nil {
		t.Fatalf("line %.80q: %v", line, err)
	}
	return object{f.Schema, f.Package, f.Name, line}
}

// splitLines splits JSONL into lines that keep their "\n".
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func objectsOf(t testing.TB, jsonl []byte) []object {
	t.Helper()
	var out []object
	for _, l := range splitLines(jsonl) {
		out = append(out, objectOf(t, l))
	}
	return out
}

func filter(objs []object, q catalog.Query) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		if o.matches(q) {
			b.Write(o.line)
		}
	}
	return b.Bytes()
}

func concat(objs []object) []byte { return filter(objs, catalog.Query{}) }

// writeCatalog stores objs as name's content at digest (unpublished).
func writeCatalog(t testing.TB, s storage.Store, name, digest string, objs []object) catalog.Meta {
	t.Helper()
	ctx := context.Background()
	w, err := catalog.NewWriter(ctx, s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, o := range objs {
		if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Commit(ctx, catalog.Meta{Ref: "example.com/" + name + ":latest"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func publish(t testing.TB, s storage.Store, name, digest string) catalog.Pointer {
	t.Helper()
	return publishPointer(t, s, name, catalog.Pointer{Digest: digest, Ref: "example.com/" + name + ":latest"})
}

// publishPointer publishes p, filling in what it leaves out.
func publishPointer(t testing.TB, s storage.Store, name string, p catalog.Pointer) catalog.Pointer {
	t.Helper()
	p.ResolvedRef = "example.com/" + name + "@" + p.Digest
	if p.ResolvedAt.IsZero() {
		p.ResolvedAt = time.Now()
	}
	if err := catalog.Publish(context.Background(), s, name, p); err != nil {
		t.Fatal(err)
	}
	cur, _, err := catalog.Current(context.Background(), s, name)
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// store writes and publishes objs as name; the digest is derived from
// tag, so distinct tags make distinct contents.
func store(t testing.TB, s storage.Store, name, tag string, objs []object) (catalog.Meta, catalog.Pointer) {
	t.Helper()
	d := digestOf(name + "/" + tag)
	m := writeCatalog(t, s, name, d, objs)
	return m, publish(t, s, name, d)
}

// tinyObjects is catalogd's test catalog, from the exact /all body catalogd
// serves for it.
func tinyObjects(t testing.TB) ([]object, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs/expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	return objectsOf(t, b), b
}

func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "../..")
}

// fbcObjects reads every YAML or JSON file under dir, in path order, each
// document as compact JSON with sorted keys. The bytes need not be
// catalogd's; they only need to be what both endpoints serve.
func fbcObjects(t testing.TB, dir string) []object {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var out []object
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(f))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if string(j) == "null" {
				continue
			}
			d := json.NewDecoder(bytes.NewReader(j))
			d.UseNumber()
			var v map[string]any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var line bytes.Buffer
			e := json.NewEncoder(&line)
			e.SetEscapeHTML(false)
			if err := e.Encode(v); err != nil {
				t.Fatal(err)
			}
			out = append(out, objectOf(t, line.Bytes()))
		}
		f.Close()
	}
	return out
}

// response is a fully read HTTP response.
type response struct {
	code   int
	header http.Header
	body   []byte
	// err is a failure reading the body (a truncated response).
	err error
}

// client talks to a real HTTP server running the handler. It sends
// exactly the headers given: no transparent gzip.
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func serve(t testing.TB, h http.Handler) *client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{t: t, base: srv.URL, hc: &http.Client{Transport: tr}}
}

// do sends method path with headers given as "Key: value" strings.
func (c *client) do(method, path string, headers ...string) response {
	c.t.Helper()
	r, err := c.try(method, path, headers...)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// try is do for goroutines, which must not call Fatal: a request that
// gets no response at all is an error.
func (c *client) try(method, path string, headers ...string) (response, error) {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return response{}, err
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return response{code: res.StatusCode, header: res.Header, body: body, err: err}, nil
}

func (c *client) get(path string, headers ...string) response {
	c.t.Helper()
	return c.do(http.MethodGet, path, headers...)
}

// ok fails unless the response is a complete 200, and returns its body,
// decompressed when it is gzipped.
func (r response) ok(t testing.TB) []byte {
	t.Helper()
	if r.err != nil || r.code != http.StatusOK {
		t.Fatalf("status %d, read error %v: %.200s", r.code, r.err, r.body)
	}
	return r.decoded(t)
}

func (r response) decoded(t testing.TB) []byte {
	t.Helper()
	if r.header.Get("Content-Encoding") != "gzip" {
		return r.body
	}
	return gunzip(t, r.body)
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	out, err := gunzipErr(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gunzipErr(b []byte) ([]byte, error) {
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

var errInjected = errors.New("injected store failure")

// faultyStore fails the Stats and Gets that fail decides to, to show how
// the handler answers a store that breaks.
type faultyStore struct {
	storage.Store
	mu   sync.Mutex
	fail func(op, key string, call int) bool
	// truncate, when set, makes the reader of the n-th Get of key fail
	// after the bytes it returns (< 0: never).
	truncate func(key string, call int) int64
	// calls counts Gets per key, so a failure can hit the n-th one.
	calls map[string]int
}

func newFaulty(s storage.Store) *faultyStore {
	return &faultyStore{Store: s, calls: map[string]int{}}
}

func (f *faultyStore) set(fail func(op, key string, call int) bool, truncate func(key string, call int) int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.truncate, f.calls = fail, truncate, map[string]int{}
}

func (f *faultyStore) check(op, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op+" "+key]++
	if f.fail != nil && f.fail(op, key, f.calls[op+" "+key]) {
		return fmt.Errorf("%s %s: %w", op, key, errInjected)
	}
	return nil
}

func (f *faultyStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	if err := f.check("stat", key); err != nil {
		return storage.Info{}, err
	}
	return f.Store.Stat(ctx, key)
}

func (f *faultyStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := f.check("get", key); err != nil {
		return nil, err
	}
	rc, err := f.Store.Get(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	after := int64(-1)
	if f.truncate != nil {
		after = f.truncate(key, f.calls["get "+key])
	}
	f.mu.Unlock()
	if after < 0 {
		return rc, nil
	}
	return &breakingReader{ReadCloser: rc, left: after}, nil
}

// breakingReader fails once it has returned left bytes, as a connection
// to the store dropping mid-read.
type breakingReader struct {
	io.ReadCloser
	left int64
}

func (b *breakingReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errInjected
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// logRecorder is a slog.Handler keeping every record, to check what the
// handler logs and at which level.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// at returns the messages logged at level.
func (l *logRecorder) at(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

func newLogger() (*slog.Logger, *logRecorder) {
	l := &logRecorder{}
	return slog.New(l), l
}

// syntheticObjects makes a catalog of pkgs packages, each an olm.package,
// channels and bundles of about bundleSize bytes: the shape and sizes of a
// large OperatorHub catalog.
func syntheticObjects(pkgs, channels, bundles, bundleSize int, f func(object)) {
	pad := strings.Repeat("A", bundleSize)
	for p := range pkgs {
		pkg := fmt.Sprintf("operator-%03d", p)
		f(object{"olm.package", "", pkg, fmt.Appendf(nil, `{"defaultChannel":"stable","icon":%q,"name":%q,"schema":"olm.package"}`+"\n", pad[:min(2000, bundleSize)], pkg)})
		for c := range channels {
			name := []string{"stable", "fast", "candidate", "alpha"}[c%4]
			f(object{"olm.channel", pkg, name, fmt.Appendf(nil, `{"entries":%q,"name":%q,"package":%q,"schema":"olm.channel"}`+"\n", pad[:min(1000, bundleSize)], name, pkg)})
		}
		for b := range bundles {
			name := fmt.Sprintf("%s.v1.%d.%d", pkg, b/10, b%10)
			f(object{"olm.bundle", pkg, name, fmt.Appendf(nil, `{"csv":%q,"name":%q,"package":%q,"schema":"olm.bundle"}`+"\n", pad, name, pkg)})
		}
	}
}
