// Package syncdir publishes an FBC folder into a store through the real
// pipeline, for tests of what reads published catalogs (content, GraphQL,
// pages): what serve stores is what they read.
package syncdir

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// Publish builds an OCI layout image of dir (as /configs), syncs it as
// catalog name into store and returns the pipeline's result; any failure
// fails the test.
func Publish(t testing.TB, store storage.Store, name, dir string) pipeline.Result {
	t.Helper()
	ctx := context.Background()
	layout := "ocidir://" + filepath.Join(t.TempDir(), "layout") + ":v1"
	if _, err := imagebuild.Push(ctx, imagebuild.NewRegClient(), layout, imagebuild.FromDir(dir, "/configs")); err != nil {
		t.Fatal(err)
	}
	src, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pl := pipeline.New(src, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
	res, err := pl.Run(ctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(layout)})
	if err != nil {
		t.Fatalf("sync %s: %v", name, err)
	}
	return res
}
