package sigpolicy_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/ref"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
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
	ctx := context.Background()
	payload := []byte(fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo, signedDigest))
	signer, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ref.New(repo + ":" + strings.Replace(taggedDigest, ":", "-", 1) + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	put := func(mt string, b []byte) descriptor.Descriptor {
		d := descriptor.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if _, err := rc.BlobPut(ctx, r, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cfg := put("application/vnd.oci.image.config.v1+json", []byte(`{"architecture":"","os":"","rootfs":{"type":"layers","diff_ids":[]},"config":{}}`))
	layer := put("application/vnd.dev.cosign.simplesigning.v1+json", payload)
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	m, err := manifest.New(manifest.WithOrig(v1.Manifest{Versioned: v1.ManifestSchemaVersion, MediaType: "application/vnd.oci.image.manifest.v1+json", Config: cfg, Layers: []descriptor.Descriptor{layer}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.ManifestPut(ctx, r, m); err != nil {
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
		return pl.Run(ctx, pipeline.Catalog{Name: "cat", Image: repo + ":v1"})
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
	if res, err := pl.Run(ctx, pipeline.Catalog{Name: "free", Image: reg.Host + "/free/catalog:v1"}); err != nil || res.VerifiedBy != "" {
		t.Fatalf("outside the policy: %+v %v", res, err)
	}
}
