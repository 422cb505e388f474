package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

func sample(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../examples/sample-catalog")
	if err != nil {
		t.Fatal(err)
	}
	return "ocidir://" + p + ":v1"
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestSyncCommand(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, "sync", "--name", "sample", "--image", sample(t), "--store", store)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{`catalog "sample": Published sha256:`, "46 (3 packages, 6 channels, 37 bundles)", "catalog.jsonl", "/index", "meta.json", "catalogs/sample/current"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"Resolving", "Pulling", "Validating 37 bundles", "Indexing 46 objects", "Published"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	code, out, _ = runCLI(t, "sync", "--name", "sample", "--image", sample(t), "--store", store)
	if code != 0 || !strings.Contains(out, "UpToDate") {
		t.Fatalf("second sync: exit %d\n%s", code, out)
	}
}

func TestSyncCommandErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{}, 2, "usage"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"sync", "--name", "x"}, 2, "needs --name and --image"},
		{[]string{"sync", "--name", "x", "--image", "ocidir://x:v1", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"sync", "--name", "x", "--image", "ocidir://x:v1", "--platform", "nonsense"}, 2, "invalid platform"},
		// A missing layout will not appear by retrying.
		{[]string{"sync", "--name", "x", "--image", "ocidir://" + t.TempDir() + "/missing:v1", "--store", t.TempDir()}, 1, "terminal"},
		{[]string{"sync", "--name", "Bad_Name", "--image", "ocidir://x:v1", "--store", t.TempDir()}, 2, "DNS-1123"},
		{[]string{"sync", "--name", "../x", "--image", "ocidir://x:v1", "--store", t.TempDir()}, 2, "DNS-1123"},
	}
	for _, c := range cases {
		code, out, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+stderr, c.msg) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.msg, out, stderr)
		}
	}
}

func TestServeSyncsConfiguredCatalogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	cfg := filepath.Join(dir, "catalogsync.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("storage:\n  dir: %s\ncatalogs:\n- name: sample\n  image: %s\n  pollIntervalMinutes: 1\n", store, sample(t))), 0o644)
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() { done <- run(ctx, []string{"serve", "--config", cfg, "--addr", addr}, &out, &errb) }()

	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready: %v\n%s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := fs.New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		if p, _, err := catalog.Current(ctx, st, "sample"); err == nil && p.Digest != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog never published\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The synced catalog is served, catalogd-style.
	resp, err := http.Get("http://" + addr + "/catalogs/sample/api/v1/metas?schema=olm.package")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || bytes.Count(body, []byte("\n")) != 3 || resp.Header.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("metas: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for path, want := range map[string]string{
		"/api/v1/catalogs/sample": `"digest":"sha256:`,
		"/metrics":                "catalogsync_syncs_total",
		"/openapi.yaml":           "openapi:",
	} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(want)) {
			t.Errorf("%s: %d, body lacks %q:\n%.400s", path, resp.StatusCode, want, body)
		}
	}
	resp, err = http.Get("http://" + addr + "/catalogs/nope/api/v1/all")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("unknown catalog: %v %v", resp, err)
	}
	resp.Body.Close()

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d\n%s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on cancel")
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown field": "catalogs:\n- name: a\n  image: ocidir://x:v1\n  colour: red\n",
		"bad name":      "catalogs:\n- name: A_B\n  image: ocidir://x:v1\n",
		"duplicate":     "catalogs:\n- name: a\n  image: ocidir://x:v1\n- name: a\n  image: ocidir://y:v1\n",
		"bad image":     "catalogs:\n- name: a\n  image: 'not a ref!'\n",
		// Once wrapped round to 10 s.
		"poll overflow": "catalogs:\n- name: a\n  image: ocidir://x:v1\n  pollIntervalMinutes: 307445734562\n",
	} {
		cfg := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		os.WriteFile(cfg, []byte(body), 0o644)
		code, _, stderr := runCLI(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
		if code != 1 || !strings.Contains(stderr, cfg) {
			t.Errorf("%s: exit %d: %s", name, code, stderr)
		}
	}
}

// writeConfig writes a serve config listing catalogs with the sample image.
func writeConfig(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("catalogs:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  image: %s\n", n, sample(t))
	}
	p := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPollCommand(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "a", "b")
	store := t.TempDir()
	code, out, stderr := runCLI(t, "poll", "--config", cfg, "--store", store)
	if code != 0 || !strings.Contains(out, "a: Published") || !strings.Contains(out, "b: Published") {
		t.Fatalf("first poll: exit %d\n%s%s", code, out, stderr)
	}
	// writeConfig sets no poll interval: published tag catalogs are not
	// polled again.
	code, out, _ = runCLI(t, "poll", "--config", cfg, "--store", store)
	if code != 0 || !strings.Contains(out, "a: not due") {
		t.Fatalf("second poll: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "poll"); code != 2 {
		t.Fatalf("poll without config: exit %d", code)
	}
}

// A second image with one package changed is synced incrementally: the
// summary says which files were reused and that the content shares the
// rest of its lines with the first.
func TestSyncCommandIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v1 := filepath.Join("..", "..", "testdata", "fbc", "community-v4.21-3pkgs", "configs")
	v2 := t.TempDir()
	if err := os.CopyFS(v2, os.DirFS(v1)); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(v2, "aws-neuron-operator", "catalog.yaml")
	b, err := os.ReadFile(changed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, bytes.Replace(b, []byte("image: "), []byte("image: mirror.example/"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(t.TempDir(), "layout")
	rc := imagebuild.NewRegClient()
	store := t.TempDir()
	for i, dir := range []string{v1, v2} {
		ref := fmt.Sprintf("ocidir://%s:v%d", layout, i+1)
		if _, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(dir, "/configs")); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runCLI(t, "sync", "--name", "c", "--image", ref, "--store", store)
		if code != 0 {
			t.Fatalf("sync %d: exit %d\n%s%s", i+1, code, out, stderr)
		}
		want := []string{"files       3 (0 reused)", ", sha256 "}
		if i == 1 {
			want = []string{"files       3 (2 reused)", "(shared content: 3 extents, lines of 1 earlier digest)", "delta.jsonl"}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("sync %d: output lacks %q:\n%s", i+1, w, out)
			}
		}
	}
}
