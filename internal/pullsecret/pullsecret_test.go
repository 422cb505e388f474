package pullsecret_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/internal/pullsecret"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/kubeobj"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	user    = "catalog-reader"
	oldPass = "old-Pw-9f3a61c2d84e"
	newPass = "new-Pw-5b7e20a9c13f"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../..")
}

func pushCatalog(t *testing.T, reg *servers.Registry, ca *servers.TestCA, pass, repoTag string) string {
	t.Helper()
	h := config.HostNewName(reg.Host)
	h.RegCert, h.User, h.Pass = string(ca.CertPEM), user, pass
	rc := regclient.New(regclient.WithConfigHost(*h))
	img := imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs")
	d, err := imagebuild.Push(context.Background(), rc, reg.Host+"/"+repoTag, img)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func dockerSecret(pass string, host string) *unstructured.Unstructured {
	return kubeobj.Secret("default", "catalog-pull", "kubernetes.io/dockerconfigjson", map[string][]byte{
		".dockerconfigjson": []byte(`{"auths":{"https://` + host + `/v1/":{"username":"` + user + `","password":"` + pass + `"}}}`)})
}

// TestPullSecretAndCA syncs from a Distribution registry with htpasswd
// auth and TLS from a test CA, with credentials from a Secret in a real
// kube-apiserver that is rotated while the source keeps running.
func TestPullSecretAndCA(t *testing.T) {
	ca := servers.NewTestCA(t)
	reg := servers.StartRegistry(t, servers.WithTLS(ca), servers.WithHtpasswd(map[string]string{user: oldPass}))
	digest := pushCatalog(t, reg, ca, oldPass, "acme/catalog:v1")
	kube := servers.StartKube(t)
	restCfg, err := kubeclient.Config(kube.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(restCfg)
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := pullsecret.New(dyn, "default", "catalog-pull", pullsecret.WithLogger(log))
	if err := w.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	newPipeline := func(opts ...source.Option) *pipeline.Pipeline {
		src, err := source.New(append([]source.Option{source.WithDockerConfig(false), source.WithLogger(log),
			source.WithRetry(0, 10*time.Millisecond, 50*time.Millisecond), source.WithCredentials(w)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true), pipeline.WithLogger(log))
	}
	image := reg.Host + "/acme/catalog:v1"
	var errs []string
	run := func(pl *pipeline.Pipeline, name string) (pipeline.Result, error) {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
		defer scancel()
		res, err := pl.Run(sctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(image)})
		if err != nil {
			errs = append(errs, err.Error())
		}
		return res, err
	}
	waitVersion := func(after uint64) {
		t.Helper()
		for i := 0; ; i++ {
			if _, v := w.Credentials(); v > after {
				return
			}
			if i > 600 {
				t.Fatal("the watcher never saw the Secret change")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Without the CA: the registry's certificate is refused.
	if _, err := run(newPipeline(), "no-ca"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	// With the CA directory but no Secret yet: unauthorized.
	caDir := filepath.Dir(ca.CertFile)
	pl := newPipeline(source.WithCADir(caDir))
	if _, err := run(pl, "cat"); err == nil || !isUnauthorized(err) {
		t.Fatalf("without credentials: %v", err)
	}
	// A Secret with the wrong password: still unauthorized.
	_, v0 := w.Credentials()
	sec, err := kubeobj.Create(ctx, dyn, kubeobj.Secrets, dockerSecret("wrong-"+newPass, reg.Host))
	if err != nil {
		t.Fatal(err)
	}
	waitVersion(v0)
	if _, err := run(pl, "cat"); err == nil || !isUnauthorized(err) {
		t.Fatalf("wrong password: %v", err)
	}
	// The Secret is fixed: the same pipeline syncs.
	_, v1 := w.Credentials()
	sec.Object["data"] = dockerSecret(oldPass, reg.Host).Object["data"]
	if sec, err = kubeobj.Update(ctx, dyn, kubeobj.Secrets, sec); err != nil {
		t.Fatal(err)
	}
	waitVersion(v1)
	res, err := run(pl, "cat")
	if err != nil || res.Digest != digest {
		t.Fatalf("with the pull secret: %+v %v", res, err)
	}
	// The registry's password is rotated: the old secret fails, the
	// rotated Secret works, with no new source.
	reg.Stop()
	reg.SetUsers(map[string]string{user: newPass})
	reg.Start()
	digest2 := pushCatalog(t, reg, ca, newPass, "acme/catalog:v1")
	_ = digest2
	if _, err := run(pl, "cat2"); err == nil || !isUnauthorized(err) {
		t.Fatalf("after the registry rotated: %v", err)
	}
	_, v2 := w.Credentials()
	sec.Object["data"] = dockerSecret(newPass, reg.Host).Object["data"]
	if _, err = kubeobj.Update(ctx, dyn, kubeobj.Secrets, sec); err != nil {
		t.Fatal(err)
	}
	waitVersion(v2)
	if res, err := run(pl, "cat2"); err != nil || res.Digest == "" {
		t.Fatalf("with the rotated secret: %+v %v", res, err)
	}
	// No password in any log line (debug included) or error.
	all := logs.String() + strings.Join(errs, "\n")
	for _, p := range []string{oldPass, newPass} {
		if strings.Contains(all, p) {
			t.Fatalf("password %q leaked:\n%s", p, all)
		}
	}
	if !strings.Contains(logs.String(), "pull secret updated") {
		t.Fatalf("no log of the secret change:\n%s", logs.String())
	}
}

func isUnauthorized(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unauthorized") || strings.Contains(s, "401") || errors.Is(err, context.DeadlineExceeded) && false
}

// TestLeastPrivilege runs the watcher as a service account granted get,
// list and watch on that one Secret by name (the Role in
// docs/registries.md), and as one granted nothing: that one's start fails
// within the wait instead of hanging.
func TestLeastPrivilege(t *testing.T) {
	kube := servers.StartKube(t)
	restCfg, err := kubeclient.Config(kube.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := dynamic.NewForConfigOrDie(restCfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := kubeobj.Create(ctx, admin, kubeobj.Secrets, dockerSecret("p", "registry.example.test")); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		if _, err := kubeobj.Create(ctx, admin, kubeobj.ServiceAccounts, kubeobj.Object("v1", "ServiceAccount", "default", sa, nil)); err != nil {
			t.Fatal(err)
		}
		tok, err := kubeobj.Token(ctx, admin, "default", sa, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	role := kubeobj.Object("rbac.authorization.k8s.io/v1", "Role", "default", "pull", map[string]any{"rules": []any{map[string]any{
		"apiGroups": []any{""}, "resources": []any{"secrets"}, "resourceNames": []any{"catalog-pull"}, "verbs": []any{"get", "list", "watch"}}}})
	if _, err := kubeobj.Create(ctx, admin, kubeobj.Roles, role); err != nil {
		t.Fatal(err)
	}
	binding := kubeobj.Object("rbac.authorization.k8s.io/v1", "RoleBinding", "default", "pull", map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pull"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}}})
	if _, err := kubeobj.Create(ctx, admin, kubeobj.RoleBindings, binding); err != nil {
		t.Fatal(err)
	}
	as := func(tok string) dynamic.Interface {
		c := rest.AnonymousClientConfig(restCfg)
		c.BearerToken = tok
		return dynamic.NewForConfigOrDie(c)
	}
	w := pullsecret.New(as(token("reader")), "default", "catalog-pull")
	if err := w.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if c, _ := w.Credentials(); c["registry.example.test"].Password != "p" {
		t.Fatalf("credentials %v", c)
	}
	none := pullsecret.New(as(token("nobody")), "default", "catalog-pull")
	if err := none.Start(ctx, 2*time.Second); err == nil || !strings.Contains(err.Error(), "not listed") {
		t.Fatalf("without access: %v", err)
	}
}
