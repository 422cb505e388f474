package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/buildindex"
	"github.com/catalogsync/catalogsync/sync/fbc"
)

func TestIndexCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "configs")
	if err := os.CopyFS(dir, os.DirFS("../../testdata/fbc/tiny/configs")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := execute(context.Background(), []string{"index", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	files, h, err := buildindex.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Sum(files)
	if _, err := buildindex.Open(filepath.Join(root, "catalogsync-index"), d); err != nil || !strings.Contains(out.String(), d) {
		t.Fatalf("default output dir: %v\n%s", err, out.String())
	}

	custom := filepath.Join(root, "elsewhere")
	if err := execute(context.Background(), []string{"index", "--out", custom, dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(custom, buildindex.ManifestFile)); err != nil {
		t.Fatal(err)
	}

	var ue usageError
	if err := execute(context.Background(), []string{"index"}, &out, &out); !errors.As(err, &ue) {
		t.Fatalf("no argument: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"schema":"olm.bundle","package":"nope","name":"x"}`), 0o644)
	if err := execute(context.Background(), []string{"index", dir}, &out, &out); !errors.Is(err, fbc.ErrInvalid) {
		t.Fatalf("invalid FBC: %v", err)
	}
}
