// Package kubeobj makes and changes objects in a test kube-apiserver with
// the dynamic client, as the product reads them: a test then links neither
// client-go's typed clientset nor k8s.io/api's types (a few hundred
// packages, and a second or more to link each test binary).
package kubeobj

import (
	"context"
	"encoding/base64"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The resources tests make.
var (
	Secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ServiceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	Roles           = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	RoleBindings    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// Object is an object's apiVersion, kind, namespace and name, with its
// other fields.
func Object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

// Secret is a Secret of type typ holding data.
func Secret(ns, name, typ string, data map[string][]byte) *unstructured.Unstructured {
	enc := map[string]any{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString(v)
	}
	return Object("v1", "Secret", ns, name, map[string]any{"type": typ, "data": enc})
}

// Create makes u, a gvr, in its namespace.
func Create(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
}

// Update replaces u, a gvr read before, in its namespace.
func Update(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Resource(gvr).Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{})
}

// Delete deletes the gvr named name in ns.
func Delete(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) error {
	return c.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// Token asks the apiserver for a token of service account sa in ns
// (TokenRequest) for audiences (none: the apiserver's own) and valid for
// ttl (0: the apiserver's default).
func Token(ctx context.Context, c dynamic.Interface, ns, sa string, audiences []string, ttl time.Duration) (string, error) {
	spec := map[string]any{}
	if len(audiences) > 0 {
		auds := make([]any, len(audiences))
		for i, a := range audiences {
			auds[i] = a
		}
		spec["audiences"] = auds
	}
	if ttl > 0 {
		spec["expirationSeconds"] = int64(ttl.Seconds())
	}
	req := Object("authentication.k8s.io/v1", "TokenRequest", ns, sa, map[string]any{"spec": spec})
	tr, err := c.Resource(ServiceAccounts).Namespace(ns).Create(ctx, req, metav1.CreateOptions{}, "token")
	if err != nil {
		return "", err
	}
	tok, _, err := unstructured.NestedString(tr.Object, "status", "token")
	return tok, err
}
