package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
)

type sigChecker struct {
	by  string
	err error
}

func (s sigChecker) Check(context.Context, string, string, source.Resolved) (string, error) {
	return s.by, s.err
}

// A registry failure while fetching signatures is retried; a policy
// verdict (or a registry error that no retry can fix) is terminal; a pass
// says what verified the image.
func TestUnitSignatureOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		sig       sigChecker
		reason    pipeline.Reason
		retryable bool
	}{
		{"registry unreachable", sigChecker{err: &source.RegistryError{Op: "referrers", Ref: "reg/c", Err: errors.New("connection refused")}}, pipeline.ReasonRegistry, true},
		{"registry refuses the reference", sigChecker{err: &source.RegistryError{Op: "referrers", Ref: "reg/c", Err: source.ErrInvalidRef}}, pipeline.ReasonSignature, false},
		{"unsigned", sigChecker{err: errors.New("no signature")}, pipeline.ReasonSignature, false},
		{"verified", sigChecker{by: "key rule k"}, "", false},
	} {
		src, _, pl := newUnit(t, pipeline.WithSignatureCheck(c.sig))
		src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
		res, err := runOnce(t, pl, "c", "reg/c:v1")
		if c.reason == "" {
			if err != nil || res.VerifiedBy != "key rule k" {
				t.Errorf("%s: %v, verified by %q", c.name, err, res.VerifiedBy)
			}
			continue
		}
		if se, ok := pipeline.AsError(err); !ok || se.Reason != c.reason || se.Retryable != c.retryable {
			t.Errorf("%s: %v, want %s retryable=%v", c.name, err, c.reason, c.retryable)
		}
	}
}
