package ui

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// Every answer carries the security headers; names that are not
// catalogs, packages or bundles get error pages, and content of a catalog
// that is no longer configured is not shown.
func TestHTTPAnswers(t *testing.T) {
	store := newStore(t)
	dir := filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs")
	syncDir(t, store, "c3", dir)
	syncDir(t, store, "gone", dir) // stored, not configured
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "c3", Image: catalogspec.ParseImage("example.test/c3:v1")}, {Name: "never", Image: catalogspec.ParseImage("example.test/n:v1")}}, nil)
	for _, c := range []struct {
		path, ctype string
		code        int
	}{
		{"/ui/", "text/html; charset=utf-8", 200},
		{"/ui/catalogs/c3/", "text/html; charset=utf-8", 200},
		{"/ui/catalogs/c3/?page=999&q=%00%ff", "text/html; charset=utf-8", 200},
		{"/ui/catalogs/c3/packages/aws-neuron-operator/", "text/html; charset=utf-8", 200},
		{"/ui/catalogs/c3/packages/aws-neuron-operator/graph.mmd", "text/plain; charset=utf-8", 200},
		{"/ui/catalogs/c3/packages/aws-neuron-operator/bundles/aws-neuron-operator.v1.2.0", "text/html; charset=utf-8", 200},
		{"/ui/catalogs/c3/packages/apicurio-registry-3/icon", "image/svg+xml", 200},
		{"/ui/catalogs/c3/changes", "text/html; charset=utf-8", 200},
		{"/ui/assets/app.js", "text/javascript; charset=utf-8", 200},
		{"/ui/assets/style.css", "text/css; charset=utf-8", 200},
		{"/ui/assets/vendor.sh", "text/plain; charset=utf-8", 404},
		{"/ui/catalogs/c3/packages/nope/", "text/html; charset=utf-8", 404},
		{"/ui/catalogs/c3/packages/aws-neuron-operator/bundles/nope", "text/html; charset=utf-8", 404},
		{"/ui/catalogs/c3/packages/aws-neuron-operator/icon", "text/html; charset=utf-8", 404},
		{"/ui/catalogs/never/", "text/html; charset=utf-8", 200}, // its sync state
		{"/ui/catalogs/never/packages/x/", "text/html; charset=utf-8", 404},
		{"/ui/catalogs/gone/", "text/html; charset=utf-8", 404},
		{"/ui/catalogs/Not_A_Name/", "text/html; charset=utf-8", 400},
		{"/ui/catalogs/c3/changes?from=sha256:nothex", "text/html; charset=utf-8", 404},
		{"/ui/nowhere", "text/html; charset=utf-8", 404},
	} {
		resp, body := get(t, srv.URL+c.path)
		if resp.StatusCode != c.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), strings.Split(c.ctype, ";")[0]) {
			t.Errorf("%s: %d %s, want %d %s (%.200s)", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.code, c.ctype, body)
		}
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", c.path, h)
		}
		if strings.HasPrefix(c.ctype, "text/html") && c.code == 200 && !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: page policy %q", c.path, h.Get("Content-Security-Policy"))
		}
	}
	if resp, body := get(t, srv.URL+"/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/ui/"`) {
		t.Errorf("/: %d", resp.StatusCode)
	}
	// The only earlier content of c3 is none: nothing to compare with.
	if _, body := get(t, srv.URL+"/ui/catalogs/c3/changes"); !strings.Contains(body, `id="none"`) {
		t.Error("changes of a catalog published once")
	}
}
