package graphql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/catalogsync/catalogsync/test/servers"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/graphql"
	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/syncdir"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// shared is the workplace's shared folder (servers.SharedDir).
func shared() string { return servers.SharedDir() }

// peer returns the path of a reference binary, or skips.
func peer(t testing.TB, name string) string { return servers.Peer(t, name) }

// fbcDir returns a catalog directory: testdata first, then ../shared.
func fbcDir(t testing.TB, set string) string {
	t.Helper()
	for _, p := range []string{
		filepath.Join(repoRoot, "testdata", "fbc", set, "configs"),
		filepath.Join(shared(), "testdata", "fbc", set, "configs"),
	} {
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	t.Skipf("catalog %s absent (testdata/fbc or ../shared/testdata/fbc)", set)
	return ""
}

// syncDir publishes the FBC folder dir as catalog name through the real
// pipeline.
func syncDir(t testing.TB, store storage.Store, name, dir string) pipeline.Result {
	return syncdir.Publish(t, store, name, dir)
}

// ours serves store with the content and GraphQL handlers, as serve
// mounts them.
func ours(t testing.TB, store storage.Store, opts ...content.Option) *httptest.Server {
	t.Helper()
	r, _ := router(store, opts...)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

// router is what ours serves, and its GraphQL handler.
func router(store storage.Store, opts ...content.Option) (http.Handler, *graphql.Handler) {
	var ch *content.Handler
	g := graphql.New(graphql.OpenerFunc(func(ctx context.Context, name string) (*catalog.Catalog, error) {
		return ch.Catalog(ctx, name)
	}), graphql.WithLogger(slog.New(slog.DiscardHandler)))
	ch = content.New(store, append([]content.Option{content.WithGraphQL(g), content.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	r := chi.NewRouter()
	ch.Mount(r)
	return r, g
}

func newStore(t testing.TB) storage.Store {
	t.Helper()
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// catalogdRef stores dir with catalogd's own code and serves it with
// GraphQL enabled; it returns the base URL ("http://127.0.0.1:port").
func catalogdRef(t testing.TB, name, dir string) string {
	t.Helper()
	bin := peer(t, "catalogd-ref")
	root := t.TempDir()
	if out, err := exec.Command(bin, "store", "-fbc", dir, "-root", root, "-name", name, "-graphql").CombinedOutput(); err != nil {
		t.Fatalf("catalogd-ref store: %v\n%s", err, out)
	}
	return startRef(t, bin, root)
}

func startRef(t testing.TB, bin, root string) string {
	t.Helper()
	addr := freeport.Addr(t)
	cmd := exec.Command(bin, "serve", "-root", root, "-addr", addr, "-graphql")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	// Bounded: a connection refused means not yet listening.
	for range 500 {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return base
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("catalogd-ref did not listen on %s", addr)
	return ""
}

// answer is one HTTP answer to a GraphQL request.
type answer struct {
	code  int
	ctype string
	body  []byte
}

func post(t testing.TB, base, name, body string) answer {
	t.Helper()
	resp, err := http.Post(base+"/catalogs/"+name+"/api/v1/graphql", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

func queryBody(q string) string {
	b, _ := json.Marshal(map[string]string{"query": q})
	return string(b)
}

// unordered are the keys whose arrays catalogd builds from Go maps, so
// their order is not part of the answer; their elements have a name.
var unordered = map[string]bool{"schemas": true, "types": true, "possibleTypes": true, "interfaces": true, "args": true}

// canonical decodes a JSON answer and orders what catalogd leaves in map
// order. The package and name arguments, ours only, are dropped.
func canonical(t testing.TB, b []byte) string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("answer is not JSON: %v: %.300s", err, b)
	}
	v = canon(v, "")
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

func canon(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canon(e, k)
		}
		return x
	case []any:
		out := x[:0]
		for _, e := range x {
			if key == "args" && isExtraArg(e) {
				continue
			}
			out = append(out, canon(e, ""))
		}
		if unordered[key] {
			slices.SortFunc(out, func(a, b any) int { return strings.Compare(nameOf(a), nameOf(b)) })
		}
		return out
	}
	return v
}

func isExtraArg(e any) bool {
	n := nameOf(e)
	return n == "package" || n == "name"
}

func nameOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprint(m["name"])
	}
	return fmt.Sprint(v)
}

// queries reads testdata/queries.graphql: queries separated by lines
// starting with "#".
func queries(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/queries.graphql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var name string
	var cur strings.Builder
	flush := func() {
		if name != "" && strings.TrimSpace(cur.String()) != "" {
			out[name] = cur.String()
		}
		cur.Reset()
	}
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(l, "#") {
			flush()
			name = strings.TrimSpace(strings.TrimPrefix(l, "#"))
			continue
		}
		cur.WriteString(l)
	}
	flush()
	return out
}

// scaledCatalog makes copies renamed copies of the catalog in dir (16 of
// community-v4.21 are about 220 MB), with the repository's generator.
func scaledCatalog(t testing.TB, dir string, copies int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "scaled")
	if err := imagebuild.GenerateCopies(dir, out, copies); err != nil {
		t.Fatal(err)
	}
	return out
}
