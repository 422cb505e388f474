package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/source"
)

// ReasonSignature means the image fails the signature policy (terminal).
const ReasonSignature Reason = "SignatureInvalid"

// SignatureChecker verifies a resolved image before anything of it is
// published; sigpolicy.Policy is one. It gets the catalog's name (it may
// have a requirement of its own) and image, and returns what verified the
// image, empty when no requirement applies.
type SignatureChecker interface {
	Check(ctx context.Context, catalog, image string, res source.Resolved) (string, error)
}

// WithSignatureCheck requires every image to pass c before it is pulled
// or published. A failure is terminal: the catalog stays at what it
// served.
func WithSignatureCheck(c SignatureChecker) Option {
	return func(p *Pipeline) { p.sigs = c }
}

func (p *Pipeline) checkSignature(ctx context.Context, c catalogspec.Catalog, resolved source.Resolved, res *Result) error {
	if p.sigs == nil {
		return nil
	}
	by, err := p.sigs.Check(ctx, c.Name, c.Image.String(), resolved)
	if err != nil {
		if source.Retryable(err) && isRegistryErr(err) {
			return registryError(PhaseResolving, err)
		}
		return &Error{Phase: PhaseResolving, Reason: ReasonSignature, Err: fmt.Errorf("signature policy: %w", err)}
	}
	res.VerifiedBy = by
	return nil
}

// isRegistryErr tells a registry failure fetching signatures (worth a
// retry) from a policy verdict.
func isRegistryErr(err error) bool {
	var re *source.RegistryError
	return errors.As(err, &re)
}
