package tokenreview_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/handlers/events/tokenreview"
	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/test/kubeobj"
	"github.com/catalogsync/catalogsync/test/servers"
)

// countingReviews counts the TokenReviews sent to the apiserver.
type countingReviews struct {
	tokenreview.Client
	n atomic.Int32
}

func (c *countingReviews) Create(ctx context.Context, tr *authv1.TokenReview, o metav1.CreateOptions) (*authv1.TokenReview, error) {
	c.n.Add(1)
	return c.Client.Create(ctx, tr, o)
}

// A real kube-apiserver issues service-account tokens (TokenRequest), and
// the Reviewer accepts exactly those for its audience.
func TestReviewerAgainstKubeAPIServer(t *testing.T) {
	k := servers.StartKube(t)
	cfg, err := kubeclient.Config(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeobj.Create(ctx, dyn, kubeobj.ServiceAccounts, kubeobj.Object("v1", "ServiceAccount", "default", "oidc-pingsource", nil)); err != nil {
		t.Fatal(err)
	}
	token := func(aud string) string {
		t.Helper()
		tok, err := kubeobj.Token(ctx, dyn, "default", "oidc-pingsource", []string{aud}, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	auth, err := tokenreview.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reviews := &countingReviews{Client: auth}
	r, err := tokenreview.New(reviews, "catalogsync-events")
	if err != nil {
		t.Fatal(err)
	}

	good := token("catalogsync-events")
	for range 3 {
		user, err := r.Review(ctx, good)
		if err != nil || user != "system:serviceaccount:default:oidc-pingsource" {
			t.Fatalf("valid token: %q %v", user, err)
		}
	}
	if n := reviews.n.Load(); n != 1 {
		t.Fatalf("3 reviews of one token sent %d TokenReviews, want 1 (cached)", n)
	}

	parts := strings.Split(good, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	for name, tok := range map[string]string{
		"other audience": token("someone-else"),
		"forged":         forged,
		"not a JWT":      "let-me-in",
	} {
		if _, err := r.Review(ctx, tok); !errors.Is(err, tokenreview.ErrRejected) {
			t.Errorf("%s: %v, want ErrRejected", name, err)
		}
	}
	if n := reviews.n.Load(); n != 3 {
		t.Fatalf("%d TokenReviews, want 3 (a non-JWT is refused without one)", n)
	}
}
