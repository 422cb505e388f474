package imagebuild

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"fmt"
	"strings"

	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/ref"
	"github.com/sigstore/sigstore/pkg/signature"
)

// CosignSign stores, as cosign does, a signature by key of a payload
// naming signedDigest at the tag sha256-<hex>.sig of taggedDigest in repo
// (a registry repository or an ocidir:// layout). A genuine signature has
// both digests equal; tests forge others with different ones.
func CosignSign(ctx context.Context, rc *regclient.RegClient, repo string, key crypto.Signer, taggedDigest, signedDigest string) error {
	payload := []byte(fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo, signedDigest))
	signer, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		return err
	}
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return err
	}
	r, err := ref.New(repo + ":" + strings.Replace(taggedDigest, ":", "-", 1) + ".sig")
	if err != nil {
		return err
	}
	put := func(mt string, b []byte) (descriptor.Descriptor, error) {
		d := descriptor.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		_, err := rc.BlobPut(ctx, r, d, bytes.NewReader(b))
		return d, err
	}
	cfg, err := put("application/vnd.oci.image.config.v1+json", []byte(`{"architecture":"","os":"","rootfs":{"type":"layers","diff_ids":[]},"config":{}}`))
	if err != nil {
		return err
	}
	layer, err := put("application/vnd.dev.cosign.simplesigning.v1+json", payload)
	if err != nil {
		return err
	}
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	m, err := manifest.New(manifest.WithOrig(v1.Manifest{Versioned: v1.ManifestSchemaVersion, MediaType: "application/vnd.oci.image.manifest.v1+json", Config: cfg, Layers: []descriptor.Descriptor{layer}}))
	if err != nil {
		return err
	}
	return rc.ManifestPut(ctx, r, m)
}
