package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --clustercatalogs without --base-url is a usage mistake, named before
// any cluster is looked for (none is here).
func TestServeClusterCatalogsNeedsBaseURL(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{
		{"serve", "--clustercatalogs", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--kubeconfig", ""},
		{"serve", "--clustercatalogs", "--base-url", "catalogsync.example.com", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--kubeconfig", ""},
	} {
		code, out, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "--clustercatalogs needs --base-url") || strings.Contains(stderr, "cluster config") {
			t.Errorf("%v: exit %d, want 2 naming --base-url:\n%s%s", args, code, out, stderr)
		}
	}
}

// An uppercase catalog name is told to be lowercase, on the command line
// and in the config file.
func TestCatalogNameMustBeLowercase(t *testing.T) {
	code, out, stderr := runCLI(t, "sync", "--name", "Community", "--image", "ocidir://x:v1", "--store", t.TempDir())
	if code != 2 || !strings.Contains(stderr, `--name "Community": a catalog name must be lowercase; "community" would do`) {
		t.Errorf("sync: exit %d:\n%s%s", code, out, stderr)
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("catalogs:\n- name: Community\n  image: ocidir://x:v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "poll", "--config", cfg, "--store", t.TempDir())
	if code != 1 || !strings.Contains(stderr, `name "Community": a catalog name must be lowercase; "community" would do`) {
		t.Errorf("config: exit %d:\n%s%s", code, out, stderr)
	}
}
