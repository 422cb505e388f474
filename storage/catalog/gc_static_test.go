package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// GC keeps the static layout of a catalog it keeps, and the digest the
// layout's state names (a racing publisher's last copy); a digest it
// deletes takes its gzip along; a catalog it deletes takes its layout.
func testGCStaticLayout(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ds := gcHistory(t, s, "ops", 4)
	for _, d := range ds {
		if err := WriteStatic(ctx, s, "ops", d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := PublishStatic(ctx, s, "ops"); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatic(ctx, s, "ops")
	if err != nil {
		t.Fatal(err)
	}
	st.Digest = ds[0]
	b, _ := json.Marshal(st)
	if _, err := s.Put(ctx, catalogPrefix("ops")+staticMarker, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Now().Add(48 * time.Hour) }
	rep := gcRunT(t, s, GCOptions{Keep: -1, Grace: -1, Now: now})
	keys := listKeys(t, s, "catalogs/ops/")
	all, gz := StaticKeys("ops")
	for _, k := range []string{all, gz, catalogPrefix("ops") + staticMarker,
		contentPrefix("ops", ds[0]) + gzipFile, contentPrefix("ops", ds[3]) + gzipFile, contentPrefix("ops", ds[3]) + contentFile} {
		if !slices.Contains(keys, k) {
			t.Errorf("GC deleted %s; left %v", k, keys)
		}
	}
	for _, d := range ds[1:3] {
		if p := catalogPrefix("ops") + digestDir(d) + "/"; slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, p) }) {
			t.Errorf("GC left content of %s", d)
		}
	}
	if !slices.ContainsFunc(rep.Kept, func(it GCItem) bool { return it.Digest == ds[0] && it.Reason == GCStatic }) {
		t.Errorf("%s not kept for the static layout", ds[0])
	}

	gcRunT(t, s, GCOptions{Grace: -1, UnconfiguredAge: -1, Catalogs: []string{"other"}, Now: now})
	if keys := listKeys(t, s, "catalogs/ops/"); len(keys) != 0 {
		t.Errorf("GC of an unconfigured catalog left %v", keys)
	}
}

func listKeys(t *testing.T, s storage.Store, prefix string) []string {
	t.Helper()
	infos, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}
