package status

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// A refused login keeps catalogd's vocabulary: Progressing True/Retrying,
// with AuthenticationFailed leading the message.
func TestAuthFailureIsRetryingWithItsReason(t *testing.T) {
	se := &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonAuth, Retryable: true,
		Err: errors.New("resolve reg.example/acme/c:v1: registry authentication failed: reg.example refused access to acme/c")}
	p := outcomeOf(pipeline.Event{Phase: pipeline.PhaseFailed, Err: se}, 3)
	if p.status != metav1.ConditionTrue || p.reason != ReasonRetrying || !strings.HasPrefix(p.message, "AuthenticationFailed while resolving: ") {
		t.Fatalf("Progressing %s/%s %q", p.status, p.reason, p.message)
	}
}
