package source

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/regclient/regclient/types/errs"
	"github.com/regclient/regclient/types/manifest"
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
	if !ok || res.ref.Scheme != "reg" {
		return nil, fmt.Errorf("%w: no registry digest to look signatures up for", ErrInvalidRef)
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
