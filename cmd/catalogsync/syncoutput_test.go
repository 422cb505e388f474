package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// A sync through a registries.conf mirror of a real registry: the summary
// names the mirror, a small layer's size reads in bytes, and the summary
// says "Published" once.
func TestSyncOutputNamesMirrorAndHumanSizes(t *testing.T) {
	mir := servers.StartRegistry(t)
	root, _ := filepath.Abs("../..")
	if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(mir.Host), mir.Host+"/mirror/acme/catalog:v1",
		imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs")); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte(`[[registry]]
prefix = "source.invalid/acme"
location = "source.invalid/acme"
[[registry.mirror]]
location = "`+mir.Host+`/mirror/acme"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "sync", "--name", "tiny", "--image", "source.invalid/acme/catalog:v1", "--store", t.TempDir(),
		"--registries-conf", conf, "--plain-http", mir.Host, "--no-docker-config")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if want := "  mirror      " + mir.Host + "/mirror/acme\n"; !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
	if strings.Contains(stderr, "0.0 MB") || !regexp.MustCompile(`layer 1/1: \d+ B/\d+ B`).MatchString(stderr) {
		t.Errorf("a small layer's size is not in bytes:\n%s", stderr)
	}
	for _, s := range []string{out, stderr} {
		if strings.Contains(s, "(Published)") {
			t.Errorf("Published said twice:\n%s", s)
		}
	}
}

// A failed sync prints its error once: the progress says it failed, the
// last line says why.
func TestSyncErrorPrintedOnce(t *testing.T) {
	missing := "ocidir://" + t.TempDir() + "/missing:v1"
	code, out, stderr := runCLI(t, "sync", "--name", "x", "--image", missing, "--store", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if n := strings.Count(out+stderr, "/missing"); n != 1 {
		t.Errorf("the error is printed %d times, want once:\n%s%s", n, out, stderr)
	}
	if !strings.Contains(stderr, "catalogsync: ") {
		t.Errorf("no final error line:\n%s", stderr)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 KB", 12345: "12 KB", 34 << 10: "35 KB",
		1_500_000: "1.5 MB", 123_456_789: "123 MB", 2_000_000_000: "2.0 GB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
