// Package status connects catalogsync to ClusterCatalogs
// (olm.operatorframework.io/v1) in a Kubernetes cluster, the way catalogd
// does: a ClusterCatalogs lists and watches them and yields the catalogs to sync,
// and a Writer reports what each sync does in the ClusterCatalog's status
// while it happens.
//
// The design is level-based. The ClusterCatalogs holds the cluster's current
// ClusterCatalogs; the Writer computes the status from that, from the
// latest progress event of each catalog and from the published pointer in
// storage, and applies it (server-side apply, status subresource) until
// the apiserver has it. Nothing reads a status back to decide what to do,
// and writing status never gates or fails a sync.
//
// Deletion: no finalizer is added. A deleted ClusterCatalog stops being
// served at once (Available reports false) and its content stays in
// storage until storage/catalog.GC, given ClusterCatalogs.Names, deletes it.
package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// GVR is the ClusterCatalog resource.
var GVR = schema.GroupVersionResource{Group: "olm.operatorframework.io", Version: "v1", Resource: "clustercatalogs"}

const (
	apiVersion = "olm.operatorframework.io/v1"
	kind       = "ClusterCatalog"
)

// Vocabulary of the ClusterCatalog API, as catalogd uses it.
const (
	TypeProgressing = "Progressing"
	TypeServing     = "Serving"

	// Progressing reasons.
	ReasonSucceeded = "Succeeded"
	ReasonRetrying  = "Retrying"
	ReasonBlocked   = "Blocked"

	// Serving reasons.
	ReasonAvailable                = "Available"
	ReasonUnavailable              = "Unavailable"
	ReasonUserSpecifiedUnavailable = "UserSpecifiedUnavailable"

	// AvailabilityMode values of spec.availabilityMode.
	AvailabilityModeAvailable   = "Available"
	AvailabilityModeUnavailable = "Unavailable"

	// SourceTypeImage is the only source type.
	SourceTypeImage = "Image"

	// MetadataNameLabel carries the object's name, so label selectors can
	// pick a catalog by name; catalogd's webhook sets it, the Writer
	// adds it where it is missing.
	MetadataNameLabel = "olm.operatorframework.io/metadata.name"
)

// DefaultFieldManager owns the fields the Writer applies.
const DefaultFieldManager = "catalogsync"

// ClusterCatalog is what the service reads of one ClusterCatalog: the
// catalog it asks to keep synced (spec.source.image.ref, parsed once per
// resourceVersion, and pollIntervalMinutes) and the fields only the
// cluster has.
type ClusterCatalog struct {
	catalogspec.Catalog
	// AvailabilityMode is spec.availabilityMode, "Available" when omitted.
	AvailabilityMode string
	// Generation is metadata.generation: it changes with the spec.
	Generation int64
}

// Unavailable reports whether the user asked for the catalog not to be
// served (spec.availabilityMode: Unavailable).
func (c ClusterCatalog) Unavailable() bool { return c.AvailabilityMode == AvailabilityModeUnavailable }

// Status is a ClusterCatalog's status, the fields the Writer owns.
type Status struct {
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
	ResolvedSource *ResolvedSource    `json:"resolvedSource,omitempty"`
	URLs           *URLs              `json:"urls,omitempty"`
	LastUnpacked   *metav1.Time       `json:"lastUnpacked,omitempty"`
}

// ResolvedSource is status.resolvedSource.
type ResolvedSource struct {
	Type  string               `json:"type"`
	Image *ResolvedImageSource `json:"image,omitempty"`
}

// ResolvedImageSource is status.resolvedSource.image.
type ResolvedImageSource struct {
	Ref string `json:"ref"`
}

// URLs is status.urls.
type URLs struct {
	Base string `json:"base"`
}

// Condition returns the condition of type t, if present.
func (s *Status) Condition(t string) *metav1.Condition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// object is what the ClusterCatalogs keeps of one ClusterCatalog.
type object struct {
	cat     ClusterCatalog
	rv      string
	labeled bool
	status  *Status // nil when the object has no status, or it does not parse
	// progressOwner is who owns the Progressing condition.
	progressOwner owner
	// other says why another controller (catalogd) manages the object,
	// "" when none does.
	other string
}

// CatalogdFinalizer is the finalizer catalogd adds to every ClusterCatalog
// it serves (operator-controller, internal/catalogd/controllers/core:
// fbcDeletionFinalizer).
const CatalogdFinalizer = "olm.operatorframework.io/delete-server-cache"

// owner is the field manager owning the Progressing condition of an
// object version, and when it last changed it: the managedFields time,
// whole seconds by the apiserver's clock, zero when not recorded.
type owner struct {
	manager string
	at      time.Time
}

// managedBy reads, from the finalizers and managedFields, whether catalogd
// manages u, and which manager owns its Progressing condition.
func managedBy(u *unstructured.Unstructured) (other string, progress owner) {
	if slices.Contains(u.GetFinalizers(), CatalogdFinalizer) {
		other = "finalizer " + CatalogdFinalizer
	}
	for _, mf := range u.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		owns := strings.Contains(mf.FieldsV1.GetRawString(), `k:{\"type\":\"Progressing\"}`)
		if owns && (progress.manager == "" || mf.Operation == metav1.ManagedFieldsOperationApply) {
			progress = owner{manager: mf.Manager}
			if mf.Time != nil {
				progress.at = mf.Time.Time
			}
		}
		// catalogd writes its status with Update as its binary's name.
		if other == "" && mf.Subresource == "status" && strings.Contains(mf.Manager, "catalogd") {
			other = "status field manager " + mf.Manager
		}
	}
	return other, progress
}

// parseObject reads the fields the service uses. A malformed spec is an
// error: the apiserver validates the CRD, so it means a different schema.
func parseObject(u *unstructured.Unstructured) (object, error) {
	return parseObjectWith(u, func(_, ref string) catalogspec.Image { return catalogspec.ParseImage(ref) })
}

// parseObjectWith is parseObject with the image reference parsed by
// image (the catalog's name and its reference).
func parseObjectWith(u *unstructured.Unstructured, image func(name, ref string) catalogspec.Image) (object, error) {
	o := object{rv: u.GetResourceVersion()}
	o.other, o.progressOwner = managedBy(u)
	o.cat.Name = u.GetName()
	o.cat.Generation = u.GetGeneration()
	o.labeled = u.GetLabels()[MetadataNameLabel] == u.GetName()
	ref, _, err := unstructured.NestedString(u.Object, "spec", "source", "image", "ref")
	if err != nil {
		return o, fmt.Errorf("%w: %s: spec.source.image.ref: %v", ErrMalformed, o.cat.Name, err)
	}
	o.cat.Image = image(o.cat.Name, ref)
	if v, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "source", "image", "pollIntervalMinutes"); err == nil && found {
		var minutes float64
		switch n := v.(type) {
		case int64:
			minutes = float64(n)
		case float64:
			minutes = n
		default:
			return o, fmt.Errorf("%w: %s: spec.source.image.pollIntervalMinutes is %T", ErrMalformed, o.cat.Name, v)
		}
		if o.cat.PollInterval, err = engine.PollInterval(minutes); err != nil {
			return o, fmt.Errorf("%w: %s: spec.source.image.%v", ErrMalformed, o.cat.Name, err)
		}
	}
	mode, _, err := unstructured.NestedString(u.Object, "spec", "availabilityMode")
	if err != nil {
		return o, fmt.Errorf("%w: %s: spec.availabilityMode: %v", ErrMalformed, o.cat.Name, err)
	}
	if mode == "" {
		mode = AvailabilityModeAvailable
	}
	o.cat.AvailabilityMode = mode
	if raw, found, _ := unstructured.NestedMap(u.Object, "status"); found {
		var st Status
		// A status that does not parse is treated as absent: the Writer
		// then replaces what it owns.
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err == nil {
			o.status = &st
		}
	}
	return o, nil
}
