package mirrorsets

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Discovery tells which resources the cluster serves in a group version
// (client-go's discovery client is one; NewDiscovery another). A group
// version the cluster does not serve is an error that
// apierrors.IsNotFound recognises.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// discoveryTimeout bounds the one request.
const discoveryTimeout = 30 * time.Second

// NewDiscovery returns a Discovery that reads the group version's
// document from the cluster cfg points at. client-go's discovery client
// would register every built-in API group at start for this one read.
func NewDiscovery(cfg *rest.Config) (Discovery, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion, c.APIPath = nil, ""
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return restDiscovery{rc}, nil
}

type restDiscovery struct{ rc *rest.RESTClient }

func (d restDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	b, err := d.rc.Get().AbsPath("/apis", gv).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var l metav1.APIResourceList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", gv, err)
	}
	return &l, nil
}
