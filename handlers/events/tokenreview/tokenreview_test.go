package tokenreview_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/catalogsync/catalogsync/handlers/events/tokenreview"
	"github.com/catalogsync/catalogsync/internal/kubeclient"
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
	core, err := coreclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "oidc-pingsource", Namespace: "default"}}
	if _, err := core.ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(aud string) string {
		t.Helper()
		exp := int64(600)
		tr, err := core.ServiceAccounts("default").CreateToken(ctx, sa.Name, &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{aud}, ExpirationSeconds: &exp},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
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
