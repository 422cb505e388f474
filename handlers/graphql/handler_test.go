package graphql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// names answers a query whose one field lists objects with a name.
func names(t *testing.T, base, field, q string) []string {
	t.Helper()
	a := post(t, base, "cat", queryBody(q))
	var res struct {
		Data   map[string][]struct{ Name string }
		Errors []any
	}
	if err := json.Unmarshal(a.body, &res); err != nil || a.code != 200 || len(res.Errors) > 0 {
		t.Fatalf("%s: %d %s", q, a.code, a.body)
	}
	var out []string
	for _, o := range res.Data[field] {
		out = append(out, o.Name)
	}
	return out
}

// metasNames lists the names /metas gives for a query string.
func metasNames(t *testing.T, base, query string) []string {
	t.Helper()
	resp, err := http.Get(base + "/catalogs/cat/api/v1/metas?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	d := json.NewDecoder(resp.Body)
	for {
		var o struct{ Name string }
		if err := d.Decode(&o); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Name)
	}
}

// TestPackageAndNameArguments: beyond catalogd, package and name narrow a
// list field through the index, with limit and offset applying to the
// matches.
func TestPackageAndNameArguments(t *testing.T) {
	store := newStore(t)
	syncDir(t, store, "cat", fbcDir(t, "community-v4.21-3pkgs"))
	base := ours(t, store).URL
	const pkg = "apicurio-registry-3"
	want := metasNames(t, base, "schema=olm.bundle&package="+pkg)
	if len(want) < 3 {
		t.Fatalf("fixture: %d bundles of %s", len(want), pkg)
	}
	if got := names(t, base, "olmbundles", `{ olmbundles(package: "`+pkg+`") { name } }`); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("package filter: %v, want %v", got, want)
	}
	if got := names(t, base, "olmbundles", `{ olmbundles(package: "`+pkg+`", limit: 2, offset: 1) { name } }`); strings.Join(got, ",") != strings.Join(want[1:3], ",") {
		t.Errorf("package filter page: %v, want %v", got, want[1:3])
	}
	if got := names(t, base, "olmbundles", `{ olmbundles(name: "`+want[2]+`") { name } }`); len(got) != 1 || got[0] != want[2] {
		t.Errorf("name filter: %v, want %s", got, want[2])
	}
	if got := names(t, base, "olmpackages", `{ olmpackages(name: "`+pkg+`") { name } }`); len(got) != 1 || got[0] != pkg {
		t.Errorf("package by name: %v", got)
	}
	if got := names(t, base, "olmbundles", `{ olmbundles(package: "no-such-package") { name } }`); len(got) != 0 {
		t.Errorf("unknown package: %v", got)
	}
}

// TestContentWithoutStoredSchema: content stored before the GraphQL schema
// was kept beside it is scanned once and answers the same.
func TestContentWithoutStoredSchema(t *testing.T) {
	dir := fbcDir(t, "community-v4.21-3pkgs")
	const q = `{ summary { totalSchemas schemas { name totalObjects totalFields } } olmbundles(limit: 20, offset: 3) { name package properties { type value } } }`
	store := newStore(t)
	syncDir(t, store, "cat", dir)
	want := post(t, ours(t, store).URL, "cat", queryBody(q))

	old := newStore(t)
	syncDir(t, old, "cat", dir)
	stripGraphQL(t, old)
	got := post(t, ours(t, old).URL, "cat", queryBody(q))
	if got.code != 200 || canonical(t, got.body) != canonical(t, want.body) {
		t.Errorf("without stored schema: %d %.300s\nwant %.300s", got.code, got.body, want.body)
	}
}

// stripGraphQL turns the store's content into what older versions wrote:
// no graphql-schema.json, no graphqlSize in meta.json.
func stripGraphQL(t *testing.T, s storage.Store) {
	t.Helper()
	ctx := context.Background()
	list, err := s.List(ctx, "catalogs/cat/")
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, in := range list {
		switch {
		case strings.HasSuffix(in.Key, "/graphql-schema.json"):
			seen = true
			if err := s.Delete(ctx, in.Key); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(in.Key, "/meta.json"):
			rc, err := s.Get(ctx, in.Key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			err = json.NewDecoder(rc).Decode(&m)
			rc.Close()
			if err != nil || m["graphqlSize"] == nil {
				t.Fatalf("meta.json: %v, %v", m, err)
			}
			delete(m, "graphqlSize")
			b, _ := json.Marshal(m)
			if _, err := s.Put(ctx, in.Key, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !seen {
		t.Fatal("no graphql-schema.json stored")
	}
	c, err := catalog.Open(ctx, s, "cat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GraphQLShape(ctx); err == nil {
		t.Fatal("shape still stored")
	}
}
