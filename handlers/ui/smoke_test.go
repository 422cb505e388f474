package ui

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	csync "github.com/catalogsync/catalogsync/sync"
)

// TestManualServe serves the community catalog for a person to look at;
// it runs only with CATALOGSYNC_UI_SERVE=duration.
func TestManualServe(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CATALOGSYNC_UI_SERVE"))
	if err != nil || sharedDir(t) == "" {
		t.Skip("set CATALOGSYNC_UI_SERVE=5m to serve the community catalog for a look")
	}
	store := newStore(t)
	syncDir(t, store, "community", filepath.Join(sharedDir(t), "testdata/fbc/community-v4.21/configs"))
	srv := startServer(t, store, csync.StaticCatalogs{{Name: "community", Image: "example.test/community:v4.21"}}, nil)
	t.Logf("serving at %s/ui/", srv.URL)
	os.WriteFile("/tmp/ui-url", []byte(srv.URL), 0o644)
	time.Sleep(d)
}
