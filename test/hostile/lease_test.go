package hostile

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// TestTwoSyncProcessesOneHost: two `catalogsync sync` processes on one
// host (so with the same default replica name) into one store, the
// second started a second after the first, against a slow registry. The
// lease belongs to a process, not a host name: the second waits for the
// first instead of taking its lease over, both succeed, and the layer is
// pulled once.
func TestTwoSyncProcessesOneHost(t *testing.T) {
	bin := servers.CatalogsyncBinary(t)
	reg := servers.StartRegistry(t)
	img := imagebuild.FromDir(filepath.Join("..", "..", "testdata", "fbc", "community-v4.21-3pkgs", "configs"), "/configs")
	if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), reg.Host+"/acme/catalog:v1", img); err != nil {
		t.Fatal(err)
	}
	proxy := servers.NewProxy(t, reg.URL)
	// About 6 s for the 12 KB layer: the second process starts well within it.
	proxy.Inject(servers.Throttle(2_000), 0, servers.BlobGET)
	store := t.TempDir()
	sync := func() *exec.Cmd {
		cmd := exec.Command(bin, "sync", "--store", store, "--name", "shared", "--no-docker-config",
			"--plain-http", proxy.Host, "--image", proxy.Host+"/acme/catalog:v1")
		cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	first := sync()
	for i := 0; proxy.Count(servers.BlobGET) == 0; i++ {
		if i > 300 {
			t.Fatal("the first sync never started pulling")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	second := sync()
	for i, cmd := range []*exec.Cmd{first, second} {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("sync %d: %v\n%s", i+1, err, cmd.Stderr)
		}
	}
	if n := proxy.Count(servers.BlobGET); n != 2 { // config blob + the one layer
		t.Fatalf("%d blob GETs, want the config and the layer once each\nfirst:\n%s\nsecond:\n%s", n, first.Stderr, second.Stderr)
	}
	// It waited for the first one instead of pulling on its own: it found
	// the digest published (the lease is taken before resolving) or its
	// content stored.
	if out := fmt.Sprint(second.Stdout, second.Stderr); !strings.Contains(out, `catalog "shared": UpToDate`) && !strings.Contains(out, `catalog "shared": Reused`) {
		t.Errorf("the second process did not use the first one's work:\n%s", out)
	}
	st, err := fs.New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if p, _, err := catalog.Current(context.Background(), st, "shared"); err != nil || p.Digest == "" {
		t.Fatalf("not published: %v", err)
	}
}
