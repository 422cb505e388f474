package sigpolicy_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// TestSignaturePolicyOCILayout: an OCI layout (ocidir://) is held to the
// policy as a registry is: a catalog's own keys and a prefix rule naming
// the layout's directory both require the cosign signature stored in the
// layout; unsigned → terminal and the signed catalog stays; a layout
// outside every prefix needs none.
func TestSignaturePolicyOCILayout(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	tiny := filepath.Join(filepath.Dir(file), "../../testdata/fbc/tiny/configs")
	dir := t.TempDir()
	rc := regclient.New()
	push := func(layout, variant string) string {
		img := imagebuild.FromDir(tiny, "/configs")
		img.Labels["test.catalogsync/variant"] = variant
		d, err := imagebuild.Push(context.Background(), rc, "ocidir://"+filepath.Join(dir, layout)+":v1", img)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	trusted, trustedPub := newKey(t)
	keys := sigpolicy.Requirement{KeyFiles: []string{trustedPub}}
	src, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pol, err := sigpolicy.New(src, []sigpolicy.Rule{{Prefix: "ocidir://" + filepath.Join(dir, "signed") + "/", Requirement: keys}},
		map[string]sigpolicy.CatalogRule{"own": {Requirement: keys}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pl := pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithSignatureCheck(pol))
	run := func(name, layout string) (pipeline.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return pl.Run(ctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage("ocidir://" + filepath.Join(dir, layout) + ":v1")})
	}
	for _, c := range []struct{ name, layout string }{{"own", "own"}, {"byprefix", "signed/cat"}} {
		repo := "ocidir://" + filepath.Join(dir, c.layout)
		good := push(c.layout, "good")
		if err := imagebuild.CosignSign(context.Background(), rc, repo, trusted, good, good); err != nil {
			t.Fatal(err)
		}
		res, err := run(c.name, c.layout)
		if err != nil || res.Action != pipeline.ActionPublished || !strings.Contains(res.VerifiedBy, "cosign key "+trustedPub) {
			t.Fatalf("%s signed: %+v %v", c.name, res, err)
		}
		push(c.layout, "unsigned")
		_, err = run(c.name, c.layout)
		se, ok := pipeline.AsError(err)
		if !ok || se.Retryable || se.Reason != pipeline.ReasonSignature || !errors.Is(err, sigpolicy.ErrUnsigned) {
			t.Fatalf("%s unsigned: %v", c.name, err)
		}
		if cur, _, err := catalog.Current(context.Background(), st, c.name); err != nil || cur.Digest != good {
			t.Fatalf("%s: current %+v %v", c.name, cur, err)
		}
	}
	// Outside the prefix's directory (a sibling with a longer name too).
	for _, layout := range []string{"free", "signedx/cat"} {
		push(layout, "free")
		if res, err := run("free", layout); err != nil || res.VerifiedBy != "" {
			t.Fatalf("%s outside the policy: %+v %v", layout, res, err)
		}
	}
}
