package tokenreview

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// approving answers every review as authenticated for the audience asked:
// a fake at the one method the Reviewer calls, to test the cache alone
// (the real apiserver is TestReviewerAgainstKubeAPIServer's).
type approving struct {
	calls int
}

func (a *approving) Create(_ context.Context, tr *authv1.TokenReview, _ metav1.CreateOptions) (*authv1.TokenReview, error) {
	a.calls++
	out := tr.DeepCopy()
	out.Status = authv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences, User: authv1.UserInfo{Username: "u"}}
	return out, nil
}

func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

// A cached acceptance never outlives the token's own expiry.
func TestCacheStopsAtTokenExpiry(t *testing.T) {
	fake := &approving{}
	r, err := New(fake, "aud")
	if err != nil {
		t.Fatal(err)
	}
	live := jwt(fmt.Sprintf(`{"exp":%d}`, time.Now().Add(time.Hour).Unix()))
	expired := jwt(fmt.Sprintf(`{"exp":%d}`, time.Now().Add(-time.Minute).Unix()))
	for range 3 {
		r.Review(context.Background(), live)
		r.Review(context.Background(), expired)
	}
	if fake.calls != 4 {
		t.Fatalf("%d reviews, want 4: one for the live token, one per use of the expired one", fake.calls)
	}
	if _, err := r.Review(context.Background(), jwt(`not json`)); err == nil {
		t.Fatal("a token whose claims are not JSON was accepted")
	}
}
