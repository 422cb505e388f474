package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

func newStore(t testing.TB) *fs.Store {
	t.Helper()
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func digestOf(v any) string {
	sum := sha256.Sum256(fmt.Append(nil, v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// obj is a test object: its index fields and its line.
type obj struct {
	schema, pkg, name string
	line              []byte
}

func (o obj) matches(q Query) bool {
	return (q.Schema == "" || q.Schema == o.schema) &&
		(q.Package == "" || q.Package == o.pkg) &&
		(q.Name == "" || q.Name == o.name)
}

// genCatalog makes a random catalog shaped like FBC: per package an
// olm.package, channels and bundles, with channel names shared across
// packages, odd schemas, objects without package or name, and lines of
// varied length.
func genCatalog(r *rand.Rand, maxPkgs int) []obj {
	schemas := []string{"olm.channel", "olm.bundle", "olm.deprecations", "custom.thing"}
	var out []obj
	line := func(schema, pkg, name string) []byte {
		pad := strings.Repeat("x", r.IntN(300))
		return fmt.Appendf(nil, `{"schema":%q,"package":%q,"name":%q,"n":%d,"pad":%q}`+"\n", schema, pkg, name, len(out), pad)
	}
	for p := range r.IntN(maxPkgs + 1) {
		pkg := fmt.Sprintf("pkg-%d", p)
		out = append(out, obj{"olm.package", "", pkg, line("olm.package", "", pkg)})
		for range r.IntN(12) {
			schema := schemas[r.IntN(len(schemas))]
			name := fmt.Sprintf("n%d", r.IntN(6)) // shared across packages
			if r.IntN(10) == 0 {
				name = ""
			}
			pk := pkg
			if r.IntN(15) == 0 {
				pk = ""
			}
			out = append(out, obj{schema, pk, name, line(schema, pk, name)})
		}
	}
	// Shuffle a few objects out of package order, as hand-written
	// catalogs do.
	for range len(out) / 10 {
		i, j := r.IntN(len(out)), r.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func concat(objs []obj, q Query) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		if o.matches(q) {
			b.Write(o.line)
		}
	}
	return b.Bytes()
}

// writerWith starts writing name at digest and adds objs; the caller
// commits or aborts it.
func writerWith(t testing.TB, s storage.Store, name, digest string, objs []obj) *Writer {
	t.Helper()
	w, err := NewWriter(context.Background(), s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	return w
}

func writeCatalog(t testing.TB, s storage.Store, name, digest string, objs []obj) Meta {
	t.Helper()
	w := writerWith(t, s, name, digest, objs)
	defer w.Abort()
	m, err := w.Commit(context.Background(), Meta{Ref: "example.com/catalog:latest", Stats: map[string]any{"pull": 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func publish(t testing.TB, s storage.Store, name, digest string, resolvedAt time.Time) {
	t.Helper()
	err := Publish(context.Background(), s, name, Pointer{
		Digest: digest, Ref: "example.com/catalog:latest",
		ResolvedRef: "example.com/catalog@" + digest, ResolvedAt: resolvedAt,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// faultyStore fails Put of keys with a given suffix: after failAfter bytes
// of the stream, or at once.
type faultyStore struct {
	storage.Store
	suffix    string
	failAfter int64
}

var errInjected = errors.New("injected store failure")

func (f *faultyStore) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if strings.HasSuffix(key, f.suffix) {
		if f.failAfter <= 0 {
			return storage.Info{}, errInjected
		}
		// Consume part of the stream, then fail, as a dropped connection.
		if _, err := io.CopyN(io.Discard, r, f.failAfter); err != nil {
			return storage.Info{}, err
		}
		return storage.Info{}, errInjected
	}
	return f.Store.Put(ctx, key, r)
}
