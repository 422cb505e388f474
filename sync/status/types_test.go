package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managedBy: catalogd's finalizer or a status field manager named after
// catalogd marks the object as catalogd's; the Progressing condition's
// owner is whoever applied it, else the first that updated it.
func TestManagedBy(t *testing.T) {
	fields := metav1.NewFieldsV1
	progressing := fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Progressing\"}":{}}}}`)
	for _, tc := range []struct {
		name       string
		finalizers []string
		mf         []metav1.ManagedFieldsEntry
		other      string
		owner      string
	}{
		{name: "plain"},
		{name: "finalizer", finalizers: []string{"example.test/x", CatalogdFinalizer}, other: "finalizer " + CatalogdFinalizer},
		{name: "catalogd status manager", mf: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{}`)},
			{Manager: "catalogd-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
		}, other: "status field manager catalogd-controller-manager", owner: "catalogd-controller-manager"},
		{name: "catalogd spec manager only", mf: []metav1.ManagedFieldsEntry{
			{Manager: "catalogd", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{}`)},
		}},
		{name: "finalizer named first", finalizers: []string{CatalogdFinalizer}, mf: []metav1.ManagedFieldsEntry{
			{Manager: "catalogd", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{}`)},
		}, other: "finalizer " + CatalogdFinalizer},
		{name: "apply wins", mf: []metav1.ManagedFieldsEntry{
			{Manager: "first", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "catalogsync", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: progressing},
			{Manager: "third", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "nofields", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
		}, owner: "catalogsync"},
		{name: "first update owns", mf: []metav1.ManagedFieldsEntry{
			{Manager: "nofields", Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: "first", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "second", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
		}, owner: "first"},
	} {
		u := &unstructured.Unstructured{}
		u.SetFinalizers(tc.finalizers)
		u.SetManagedFields(tc.mf)
		other, owner := managedBy(u)
		if other != tc.other || owner.manager != tc.owner {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.name, other, owner.manager, tc.other, tc.owner)
		}
	}
}
