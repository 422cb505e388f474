package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// kubectlOn returns a kubectl against kube: it runs the arguments with
// stdin and returns the trimmed output, failing the test on an error.
func kubectlOn(t *testing.T, kube *servers.KubeAPIServer) func(stdin string, args ...string) string {
	kubectl := servers.Binary(t, "kubectl")
	return func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kube.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// clusterCatalogKube is the package's one kube-apiserver with the
// ClusterCatalog CRD established: each start costs etcd and the
// apiserver some 15 CPU-seconds. At the test's end the ClusterCatalogs
// named are deleted, after serve stops (cleanups run last first), so that
// the next test's serve finds none of them.
func clusterCatalogKube(t *testing.T, catalogs ...string) (*servers.KubeAPIServer, func(stdin string, args ...string) string) {
	kube := servers.SharedKube(t)
	k := kubectlOn(t, kube)
	root, _ := filepath.Abs("../..")
	k("", "apply", "-f", filepath.Join(root, "deploy/crd/clustercatalog.yaml"))
	k("", "wait", "--for", "condition=Established", "--timeout", "60s", "crd/clustercatalogs.olm.operatorframework.io")
	t.Cleanup(func() { k("", append([]string{"delete", "clustercatalog", "--ignore-not-found"}, catalogs...)...) })
	return kube, k
}

// serve in ClusterCatalog mode against a real kube-apiserver: a catalog a
// user creates with kubectl is synced, its status says Serving with the
// digest and URL, its content is served, and availabilityMode Unavailable
// turns both off.
func TestServeClusterCatalogs(t *testing.T) {
	kube, k := clusterCatalogKube(t, "community", "local")
	root, _ := filepath.Abs("../..")
	reg := servers.StartRegistry(t)
	digest, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), reg.Host+"/acme/catalog:v1",
		imagebuild.FromDir(filepath.Join(root, "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--clustercatalogs", "--kubeconfig", kube.Kubeconfig,
			"--base-url", "http://" + addr, "--addr", addr, "--store", t.TempDir(),
			"--plain-http", reg.Host, "--no-docker-config", "--poll-check-interval", "1h"}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(errb.String())
		}
	}()
	waitHTTP(t, "http://"+addr+"/readyz")

	k(fmt.Sprintf(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: community
spec:
  source:
    type: Image
    image:
      ref: %s/acme/catalog:v1
`, reg.Host), "apply", "-f", "-")
	jsonpath := func(p string) string { return k("", "get", "clustercatalog", "community", "-o", "jsonpath="+p) }
	eventually(t, "Serving True", 60*time.Second, func() bool {
		return jsonpath(`{.status.conditions[?(@.type=="Serving")].status}`) == "True"
	})
	if got := jsonpath(`{.status.resolvedSource.image.ref}`); !strings.HasSuffix(got, "@"+digest) {
		t.Errorf("resolvedSource.image.ref %q, want …@%s", got, digest)
	}
	if got := jsonpath(`{.status.urls.base}`); got != "http://"+addr+"/catalogs/community" {
		t.Errorf("urls.base %q", got)
	}
	if got := jsonpath(`{.status.conditions[?(@.type=="Progressing")].reason}`); got != "Succeeded" {
		t.Errorf("Progressing reason %q", got)
	}
	if got := jsonpath(`{.metadata.labels.olm\.operatorframework\.io/metadata\.name}`); got != "community" {
		t.Errorf("metadata.name label %q", got)
	}
	metas := "http://" + addr + "/catalogs/community/api/v1/metas?schema=olm.package"
	if code := getCode(t, metas); code != 200 {
		t.Fatalf("content: %d", code)
	}

	k("", "patch", "clustercatalog", "community", "--type", "merge", "-p", `{"spec":{"availabilityMode":"Unavailable"}}`)
	eventually(t, "UserSpecifiedUnavailable", 30*time.Second, func() bool {
		return jsonpath(`{.status.conditions[?(@.type=="Serving")].reason}`) == "UserSpecifiedUnavailable"
	})
	eventually(t, "content 404", 10*time.Second, func() bool { return getCode(t, metas) == 404 })

	// A cluster user cannot make the service read its own disk.
	k(fmt.Sprintf(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: local
spec:
  source:
    type: Image
    image:
      ref: ocidir://%s:v1
`, filepath.Join(root, "examples/sample-catalog")), "apply", "-f", "-")
	local := func(p string) string { return k("", "get", "clustercatalog", "local", "-o", "jsonpath="+p) }
	eventually(t, "ocidir refused", 60*time.Second, func() bool {
		return local(`{.status.conditions[?(@.type=="Progressing")].reason}`) == "Blocked"
	})
	if msg := local(`{.status.conditions[?(@.type=="Progressing")].message}`); !strings.Contains(msg, "local image sources are not allowed") {
		t.Errorf("Progressing message %q", msg)
	}
	if got := local(`{.status.conditions[?(@.type=="Serving")].status}`); got == "True" {
		t.Error("a local ClusterCatalog is served")
	}
}

func getCode(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
