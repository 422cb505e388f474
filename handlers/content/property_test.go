package content

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// The property: every /metas answer is the catalog-order filter of /all's
// lines by the query's fields, on real catalogs.
func TestMetasIsFilterOfAll(t *testing.T) {
	sets := []struct{ name, dir string }{
		{"community-3pkgs", filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs")},
		{"community-v4.21", filepath.Join(repoRoot(t), "../shared/testdata/fbc/community-v4.21/configs")},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			if _, err := os.Stat(set.dir); err != nil {
				t.Skipf("%s absent (%v): shared test data lives beside the repository", set.dir, err)
			}
			if testing.Short() && set.name == "community-v4.21" {
				t.Skip("large catalog in -short mode")
			}
			objs := fbcObjects(t, set.dir)
			forEachBackend(t, func(t *testing.T, s storage.Store) {
				store(t, s, "cat", "v1", objs)
				c := serve(t, New(s))
				all := c.get("/catalogs/cat/api/v1/all").ok(t)
				if !bytes.Equal(all, concat(objs)) {
					t.Fatal("/all is not the stored lines")
				}
				lines := objectsOf(t, all)
				qs := queriesFor(lines)
				for i, q := range qs {
					v := url.Values{}
					for k, val := range map[string]string{"schema": q.Schema, "package": q.Package, "name": q.Name} {
						if val != "" {
							v.Set(k, val)
						}
					}
					path := "/catalogs/cat/api/v1/metas?" + v.Encode()
					want := filter(lines, q)
					r := c.get(path)
					if got := r.ok(t); !bytes.Equal(got, want) {
						t.Fatalf("%s: %d bytes, want %d bytes of /all", path, len(got), len(want))
					}
					if r.header.Get("Content-Length") != fmt.Sprint(len(want)) {
						t.Errorf("%s: Content-Length %s for %d bytes", path, r.header.Get("Content-Length"), len(want))
					}
					if i%4 == 0 {
						if got := c.get(path, "Accept-Encoding: gzip").ok(t); !bytes.Equal(got, want) {
							t.Fatalf("%s, gzip: differs from /all's filter", path)
						}
					}
				}
				t.Logf("%d objects, %d bytes, %d queries", len(lines), len(all), len(qs))
			})
		})
	}
}

// queriesFor returns every package (alone and with each schema), every
// schema, a sample of names (alone, with their schema, with their
// package), and queries matching nothing.
func queriesFor(objs []object) []catalog.Query {
	pkgs, schemas, names := map[string]bool{}, map[string]bool{}, map[string]object{}
	for _, o := range objs {
		if o.pkg != "" {
			pkgs[o.pkg] = true
		}
		schemas[o.schema] = true
		if o.name != "" {
			names[o.name] = o
		}
	}
	qs := []catalog.Query{{}, {Package: "absent"}, {Schema: "absent"}, {Name: "absent"}}
	for _, p := range sortedKeys(pkgs) {
		qs = append(qs, catalog.Query{Package: p})
		for _, s := range sortedKeys(schemas) {
			qs = append(qs, catalog.Query{Schema: s, Package: p})
		}
	}
	for _, s := range sortedKeys(schemas) {
		qs = append(qs, catalog.Query{Schema: s})
	}
	sample := sortedKeys(names)
	step := max(1, len(sample)/60)
	for i := 0; i < len(sample); i += step {
		o := names[sample[i]]
		qs = append(qs,
			catalog.Query{Name: o.name},
			catalog.Query{Schema: o.schema, Name: o.name},
			catalog.Query{Schema: o.schema, Package: o.pkg, Name: o.name},
			catalog.Query{Package: "absent", Name: o.name},
		)
	}
	return qs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
