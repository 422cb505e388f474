package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

// serve --clustercatalogs follows an ImageTagMirrorSet created while it
// runs: a ClusterCatalog whose source registry does not exist (and must
// never be contacted) is pulled from the mirror, and its Serving
// condition names the mirror.
func TestServeImageMirrorSets(t *testing.T) {
	kube, k := clusterCatalogKube(t, "mirrored")
	root, _ := filepath.Abs("../..")
	td := filepath.Join(root, "internal/mirrorsets/testdata")
	mirrorCRDs := []string{"-f", filepath.Join(td, "imagedigestmirrorset-crd.yaml"), "-f", filepath.Join(td, "imagetagmirrorset-crd.yaml")}
	k("", append([]string{"apply"}, mirrorCRDs...)...)
	// The next test's serve finds no mirror set API, as on a cluster
	// without OpenShift's; the mirror set goes with its CRD.
	t.Cleanup(func() { k("", append([]string{"delete", "--ignore-not-found"}, mirrorCRDs...)...) })
	k("", "wait", "--for", "condition=Established", "--timeout", "60s",
		"crd/imagedigestmirrorsets.config.openshift.io", "crd/imagetagmirrorsets.config.openshift.io")

	mir := servers.StartRegistry(t)
	digest, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(mir.Host), mir.Host+"/mirror/acme/catalog:v1",
		imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	var errb logbuf.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--clustercatalogs", "--kubeconfig", kube.Kubeconfig,
			"--base-url", "http://" + addr, "--addr", addr, "--store", t.TempDir(), "--registries-conf", "",
			"--plain-http", mir.Host, "--no-docker-config", "--poll-check-interval", "1h"}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(errb.String())
		}
	}()
	waitHTTP(t, "http://"+addr+"/readyz")

	k(fmt.Sprintf(`apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata:
  name: acme
spec:
  imageTagMirrors:
    - source: source.invalid/acme
      mirrors: [%s/mirror/acme]
      mirrorSourcePolicy: NeverContactSource
`, mir.Host), "apply", "-f", "-")
	eventually(t, "the mirror set applied", 30*time.Second, func() bool {
		return strings.Contains(errb.String(), "image mirror sets applied")
	})
	k(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: mirrored
spec:
  source:
    type: Image
    image:
      ref: source.invalid/acme/catalog:v1
`, "apply", "-f", "-")
	jsonpath := func(p string) string { return k("", "get", "clustercatalog", "mirrored", "-o", "jsonpath="+p) }
	eventually(t, "Serving True", 60*time.Second, func() bool {
		return jsonpath(`{.status.conditions[?(@.type=="Serving")].status}`) == "True"
	})
	want := "Serving " + digest + " from source.invalid/acme/catalog:v1 via mirror " + mir.Host + "/mirror/acme"
	if got := jsonpath(`{.status.conditions[?(@.type=="Serving")].message}`); got != want {
		t.Errorf("Serving message %q, want %q", got, want)
	}
}
