package sigpolicy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

func newKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	return k, path
}

// sign stores, as cosign does, a signature of a payload naming signedDigest
// at the tag of taggedDigest (the same for a genuine signature).
func sign(t *testing.T, rc *regclient.RegClient, repo string, key *ecdsa.PrivateKey, taggedDigest, signedDigest string) {
	t.Helper()
	if err := imagebuild.CosignSign(context.Background(), rc, repo, key, taggedDigest, signedDigest); err != nil {
		t.Fatal(err)
	}
}

// TestSignaturePolicy syncs images signed in a real registry: signed by
// the trusted key → published; unsigned, signed by another key, or a
// signature of another digest → terminal, and the old catalog stays.
func TestSignaturePolicy(t *testing.T) {
	reg := servers.StartRegistry(t)
	rc := imagebuild.NewRegClient(reg.Host)
	_, file, _, _ := runtime.Caller(0)
	tiny := filepath.Join(filepath.Dir(file), "../../testdata/fbc/tiny/configs")
	push := func(tag string, label string) string {
		img := imagebuild.FromDir(tiny, "/configs")
		img.Labels["test.catalogsync/variant"] = label
		d, err := imagebuild.Push(context.Background(), rc, reg.Host+"/acme/catalog:"+tag, img)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	trusted, trustedPub := newKey(t)
	other, _ := newKey(t)
	repo := reg.Host + "/acme/catalog"

	src, err := source.New(source.WithHosts(source.Host{Name: reg.Host, PlainHTTP: true}), source.WithDockerConfig(false), source.WithRetry(0, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pol, err := sigpolicy.New(src, []sigpolicy.Rule{{Prefix: reg.Host + "/acme", Requirement: sigpolicy.Requirement{KeyFiles: []string{trustedPub}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pl := pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true), pipeline.WithSignatureCheck(pol))
	run := func() (pipeline.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return pl.Run(ctx, catalogspec.Catalog{Name: "cat", Image: catalogspec.ParseImage(repo + ":v1")})
	}

	good := push("v1", "1")
	sign(t, rc, repo, trusted, good, good)
	res, err := run()
	if err != nil || res.Action != pipeline.ActionPublished || !strings.Contains(res.VerifiedBy, "cosign key") {
		t.Fatalf("signed: %+v %v", res, err)
	}
	for _, tc := range []struct {
		name string
		sign func(d string)
		want error
		msg  string
	}{
		{"unsigned", func(string) {}, sigpolicy.ErrUnsigned, "no cosign signature tag"},
		{"another key", func(d string) { sign(t, rc, repo, other, d, d) }, sigpolicy.ErrBadSignature, "none is by a trusted key"},
		{"another digest", func(d string) { sign(t, rc, repo, trusted, d, good) }, sigpolicy.ErrBadSignature, "another digest"},
	} {
		d := push("v1", tc.name)
		tc.sign(d)
		_, err := run()
		se, ok := pipeline.AsError(err)
		if !ok || se.Retryable || se.Reason != pipeline.ReasonSignature || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Nothing of it was published: the signed catalog is still current.
		if cur, _, err := catalog.Current(context.Background(), st, "cat"); err != nil || cur.Digest != good {
			t.Fatalf("%s: current %+v %v", tc.name, cur, err)
		}
	}
	// An image outside the policy's prefix needs no signature.
	free := push("v1", "free")
	_ = free
	if _, err := imagebuild.Push(context.Background(), rc, reg.Host+"/free/catalog:v1", imagebuild.FromDir(tiny, "/configs")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if res, err := pl.Run(ctx, catalogspec.Catalog{Name: "free", Image: catalogspec.ParseImage(reg.Host + "/free/catalog:v1")}); err != nil || res.VerifiedBy != "" {
		t.Fatalf("outside the policy: %+v %v", res, err)
	}
}
