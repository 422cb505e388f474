package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/regclient/regclient/scheme"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/errs"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/ref"
)

// CosignSignature is one signature stored by the cosign tag scheme: the
// simple-signing payload and its raw signature.
type CosignSignature struct {
	Payload   []byte
	Signature []byte
}

// Bounds on what a signature manifest may make us read.
const (
	maxSignatures       = 32
	maxSignaturePayload = 64 << 10
)

const cosignSigAnnotation = "dev.cosignproject.cosign/signature"

// CosignSignatures returns the signatures of res's digest found at the
// tag sha256-<hex>.sig of its repository (where it was resolved, so a
// mirror serves them too); none when the tag does not exist.
func (s *Client) CosignSignatures(ctx context.Context, res Resolved) ([]CosignSignature, error) {
	alg, hex, ok := strings.Cut(res.Digest, ":")
	if !ok || !signable(res.ref) {
		return nil, fmt.Errorf("%w: no registry or layout digest to look signatures up for", ErrInvalidRef)
	}
	sr := res.ref.SetTag(alg + "-" + hex + ".sig")
	m, err := s.acc.client().ManifestGet(ctx, sr)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap(sr, "get signatures", err)
	}
	img, ok := m.(manifest.Imager)
	if !ok {
		return nil, fmt.Errorf("%w: signature tag %s is not an image manifest", ErrNotImage, sr.Tag)
	}
	layers, err := img.GetLayers()
	if err != nil {
		return nil, s.wrap(sr, "get signatures", err)
	}
	var out []CosignSignature
	for _, l := range layers {
		if len(out) == maxSignatures {
			break
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[cosignSigAnnotation])
		if err != nil || len(sig) == 0 || l.Size > maxSignaturePayload {
			continue
		}
		rdr, err := s.acc.client().BlobGet(ctx, sr, l)
		if err != nil {
			return nil, s.wrap(sr, "get signature payload", err)
		}
		payload, err := io.ReadAll(io.LimitReader(rdr, maxSignaturePayload+1))
		rdr.Close()
		if err != nil {
			return nil, s.wrap(sr, "get signature payload", err)
		}
		if len(payload) > maxSignaturePayload {
			continue
		}
		out = append(out, CosignSignature{Payload: payload, Signature: sig})
	}
	return out, nil
}

// SigstoreBundleType is the media type (and artifact type) of a sigstore
// bundle attached to an image as an OCI referrer.
const SigstoreBundleType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Bounds on the referrers examined for bundles and on one bundle's size
// (a certificate chain and a few log entries take a few KiB).
const (
	maxReferrers = 32
	maxBundle    = 128 << 10
)

// SigstoreBundles returns the sigstore bundles attached to res's digest as
// OCI referrers (the referrers API, or its fallback tag), read from where
// it was resolved. At most maxReferrers are examined; a referrer whose
// manifest does not name the digest as its subject, or whose bundle is
// larger than maxBundle, is skipped.
func (s *Client) SigstoreBundles(ctx context.Context, res Resolved) ([][]byte, error) {
	if !strings.Contains(res.Digest, ":") || !signable(res.ref) {
		return nil, fmt.Errorf("%w: no registry or layout digest to look signatures up for", ErrInvalidRef)
	}
	subject := res.ref.SetDigest(res.Digest)
	rl, err := s.acc.client().ReferrerList(ctx, subject, scheme.WithReferrerMatchOpt(descriptor.MatchOpt{ArtifactType: SigstoreBundleType}))
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap(subject, "list referrers", err)
	}
	var out [][]byte
	for i, d := range rl.Descriptors {
		if i == maxReferrers {
			break
		}
		b, err := s.bundleOf(ctx, subject, d)
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// bundleOf reads the bundle of one referrer; nil when it holds none.
func (s *Client) bundleOf(ctx context.Context, subject ref.Ref, d descriptor.Descriptor) ([]byte, error) {
	mr := subject.SetDigest(d.Digest.String())
	m, err := s.acc.client().ManifestGet(ctx, mr)
	if err != nil {
		return nil, s.wrap(mr, "get referrer", err)
	}
	raw, err := m.RawBody()
	if err != nil {
		return nil, s.wrap(mr, "get referrer", err)
	}
	layer, ok := BundleLayer(raw, subject.Digest)
	if !ok {
		return nil, nil
	}
	rdr, err := s.acc.client().BlobGet(ctx, mr, layer)
	if err != nil {
		return nil, s.wrap(mr, "get bundle", err)
	}
	defer rdr.Close()
	b, err := io.ReadAll(io.LimitReader(rdr, maxBundle+1))
	if err != nil {
		return nil, s.wrap(mr, "get bundle", err)
	}
	if len(b) > maxBundle {
		return nil, nil
	}
	return b, nil
}

// BundleLayer picks the bundle layer of a referrer's manifest (raw JSON):
// the first layer of the bundle media type, when the manifest's subject
// is subjectDigest and the layer is within maxBundle.
func BundleLayer(raw []byte, subjectDigest string) (descriptor.Descriptor, bool) {
	var m struct {
		Subject *descriptor.Descriptor  `json:"subject"`
		Layers  []descriptor.Descriptor `json:"layers"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Subject == nil || m.Subject.Digest.String() != subjectDigest {
		return descriptor.Descriptor{}, false
	}
	for _, l := range m.Layers {
		if l.MediaType == SigstoreBundleType && l.Size > 0 && l.Size <= maxBundle && l.Digest.Validate() == nil {
			return l, true
		}
	}
	return descriptor.Descriptor{}, false
}

// signable tells whether signatures can be looked up beside r: in a
// registry repository, or in an OCI layout (which holds the cosign tag and
// referrers the same way).
func signable(r ref.Ref) bool { return r.Scheme == "reg" || r.Scheme == "ocidir" }
