package deploy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	serviceSA   = "system:serviceaccount:" + namespace + ":catalogsync"
	apiSourceSA = "system:serviceaccount:" + namespace + ":catalogsync-apiserversource"
)

type kube struct {
	t   *testing.T
	srv *servers.KubeAPIServer
	bin string
}

// run runs kubectl against the test apiserver as its admin.
func (k kube) run(stdin []byte, args ...string) (string, error) {
	k.t.Helper()
	cmd := exec.Command(k.bin, append([]string{"--kubeconfig", k.srv.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k kube) must(stdin []byte, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// joinDocs makes one YAML stream of objects.
func joinDocs(objs []object) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		b.WriteString("---\n")
		b.Write(o.raw)
		if !bytes.HasSuffix(o.raw, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// TestAPIServer checks the manifests against a real kube-apiserver: the
// CRD installs, every non-Knative object passes a server-side dry-run
// apply with strict field validation, the RBAC is least-privilege, and
// `catalogsync serve` started with the plain Deployment's args, env and
// config, as its service account, can do its ClusterCatalog work.
func TestAPIServer(t *testing.T) {
	k := kube{t: t, srv: servers.StartKube(t), bin: kubectl(t)}
	dd := deployDir(t)

	// The CRD and namespace for real: the dry-runs of the custom and
	// namespaced objects need them.
	k.must(nil, "apply", "--server-side", "-f", filepath.Join(dd, "crd", "clustercatalog.yaml"))
	k.must(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/clustercatalogs.olm.operatorframework.io")
	k.must(nil, "apply", "--server-side", "-f", filepath.Join(dd, "base", "namespace.yaml"))
	installThirdPartyCRDs(t, k)

	dryRun := func(t *testing.T, what string, objs []object) {
		t.Helper()
		if len(objs) == 0 {
			return
		}
		// kubectl validates strictly by default: unknown or duplicate
		// fields are errors, not warnings.
		out, err := k.run(joinDocs(objs), "apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-")
		if err != nil {
			t.Errorf("%s: server-side dry-run apply failed: %v\n%s", what, err, out)
			return
		}
		if n := strings.Count(out, "(server dry run)"); n != len(objs) {
			t.Errorf("%s: apiserver answered for %d objects, sent %d:\n%s", what, n, len(objs), out)
		}
	}

	t.Run("dry-run every manifest file", func(t *testing.T) {
		n := 0
		for _, f := range manifestFiles(t) {
			objs := readObjects(t, f)
			n += len(objs)
			rel, _ := filepath.Rel(repoRoot(t), f)
			dryRun(t, rel, objs)
		}
		if n < 10 {
			t.Errorf("only %d Kubernetes objects under deploy/", n)
		}
	})
	t.Run("dry-run rendered overlays", func(t *testing.T) {
		for _, overlay := range append(slices.Clone(overlays), readerDir) {
			t.Run(overlay, func(t *testing.T) {
				dryRun(t, "deploy/"+overlay, render(t, overlay))
			})
		}
		for _, c := range combos {
			t.Run(c.String(), func(t *testing.T) {
				dryRun(t, c.String(), renderCombo(t, c))
			})
		}
	})
	t.Run("dry-run rejects a misplaced field", func(t *testing.T) {
		// The check above is only worth something if the apiserver would
		// refuse a bad object: prove it on the real Deployment.
		o, ok := find(render(t, plainDir), "Deployment", "catalogsync")
		if !ok {
			t.Fatal("no Deployment")
		}
		var m map[string]any
		if err := yaml.Unmarshal(o.raw, &m); err != nil {
			t.Fatal(err)
		}
		spec := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		spec["containers"].([]any)[0].(map[string]any)["readOnlyRootFilesystem"] = true // belongs in securityContext
		bad, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out, err := k.run(bad, "apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-")
		if err == nil || !strings.Contains(out, "readOnlyRootFilesystem") {
			t.Fatalf("a Deployment with a misplaced field was accepted (err %v):\n%s", err, out)
		}
	})

	// OpenShift's image mirror set kinds (the tests' minimal CRDs), so
	// can-i maps them and serve below follows them as the service account.
	for _, f := range []string{"imagedigestmirrorset-crd.yaml", "imagetagmirrorset-crd.yaml"} {
		k.must(nil, "apply", "--server-side", "-f", filepath.Join(dd, "..", "internal", "mirrorsets", "testdata", f))
	}
	k.must(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/imagedigestmirrorsets.config.openshift.io", "crd/imagetagmirrorsets.config.openshift.io")
	// The service accounts and their RBAC for real.
	k.must(nil, "apply", "--server-side", "-f", filepath.Join(dd, "base", "rbac.yaml"))
	k.must(nil, "apply", "--server-side", "-f", filepath.Join(dd, "knative", "apiserversource-rbac.yaml"))

	t.Run("rbac is least-privilege", func(t *testing.T) {
		canI := func(as string, args ...string) bool {
			t.Helper()
			out, err := k.run(nil, append([]string{"auth", "can-i", "--as=" + as}, args...)...)
			// The answer is the last line; warnings may come before it.
			lines := strings.Split(strings.TrimSpace(out), "\n")
			switch strings.TrimSpace(lines[len(lines)-1]) {
			case "yes":
				return true
			case "no":
				return false
			}
			t.Fatalf("kubectl auth can-i %v: %v\n%s", args, err, out)
			return false
		}
		cc := "clustercatalogs.olm.operatorframework.io"
		// RBAC reaches the authorizer through an informer: wait for it.
		deadline := time.Now().Add(15 * time.Second)
		for !canI(serviceSA, "list", cc) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		cases := []struct {
			as   string
			args []string
			want bool
		}{
			{serviceSA, []string{"patch", cc, "--subresource=status"}, true},
			{serviceSA, []string{"update", cc, "--subresource=status"}, true},
			{serviceSA, []string{"get", cc}, true},
			{serviceSA, []string{"list", cc}, true},
			{serviceSA, []string{"watch", cc}, true},
			{serviceSA, []string{"patch", cc}, true}, // the metadata.name label
			{serviceSA, []string{"delete", cc}, false},
			{serviceSA, []string{"deletecollection", cc}, false},
			{serviceSA, []string{"create", cc}, false},
			{serviceSA, []string{"update", cc}, false},
			{serviceSA, []string{"get", "secrets", "--all-namespaces"}, false},
			{serviceSA, []string{"get", "secrets", "-n", namespace}, false},
			{serviceSA, []string{"list", "configmaps", "-n", namespace}, false},
			{serviceSA, []string{"create", "pods", "-n", namespace}, false},
			{serviceSA, []string{"patch", "customresourcedefinitions.apiextensions.k8s.io"}, false},
			{serviceSA, []string{"list", "imagedigestmirrorsets.config.openshift.io"}, true},
			{serviceSA, []string{"watch", "imagetagmirrorsets.config.openshift.io"}, true},
			{serviceSA, []string{"update", "imagedigestmirrorsets.config.openshift.io"}, false},
			{serviceSA, []string{"list", "imagecontentsourcepolicies.operator.openshift.io"}, false},
			{apiSourceSA, []string{"get", cc}, true},
			{apiSourceSA, []string{"list", cc}, true},
			{apiSourceSA, []string{"watch", cc}, true},
			{apiSourceSA, []string{"patch", cc}, false},
			{apiSourceSA, []string{"patch", cc, "--subresource=status"}, false},
			{apiSourceSA, []string{"get", "secrets", "--all-namespaces"}, false},
		}
		for _, c := range cases {
			if got := canI(c.as, c.args...); got != c.want {
				t.Errorf("%s can %v: %v, want %v", c.as, c.args, got, c.want)
			}
		}
	})

	// The quickstart as it is, and the most configured production
	// Deployment: the config files load, the env they read is set.
	t.Run("serve runs as the service account", func(t *testing.T) {
		t.Run("quickstart", func(t *testing.T) {
			serveAsServiceAccount(t, k, "quickstart", render(t, "quickstart"))
		})
		c := combo{plainDir, []string{"webhooks"}}
		t.Run(c.String(), func(t *testing.T) {
			serveAsServiceAccount(t, k, "plain-webhooks", renderCombo(t, c))
		})
	})
}

// installThirdPartyCRDs installs the tests' minimal CRDs for the
// cert-manager and Knative kinds deploy/ uses (testdata/crds): with them
// the apiserver dry-runs every object of every overlay; without them it
// would refuse the kinds it does not know.
func installThirdPartyCRDs(t *testing.T, k kube) {
	t.Helper()
	k.must(nil, "apply", "--server-side", "-f", filepath.Join("testdata", "crds"))
	k.must(nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/certificates.cert-manager.io", "crd/services.serving.knative.dev", "crd/brokers.eventing.knative.dev",
		"crd/triggers.eventing.knative.dev", "crd/pingsources.sources.knative.dev", "crd/apiserversources.sources.knative.dev")
}

// serveAsServiceAccount starts the real binary with the rendered
// Deployment's args and env and the ConfigMap's config file, authenticated as the
// catalogsync service account, and waits until it has labelled a new
// ClusterCatalog and written its status: the RBAC is not only small but
// enough, and the config file loads. The store is a local directory, not
// S3: no MinIO is started here, and the S3 path has its own tests.
func serveAsServiceAccount(t *testing.T, k kube, what string, objs []object) {
	ccName := "deploy-check-" + what
	o, _ := find(objs, "Deployment", "catalogsync")
	var d deployment
	decodeStrict(t, o, &d)
	c := d.Spec.Template.Spec.Containers[0]

	dir := t.TempDir()
	token := strings.TrimSpace(k.must(nil, "create", "token", "catalogsync", "-n", namespace, "--duration=1h"))
	kc := filepath.Join(dir, "kubeconfig")
	kcData, _ := json.Marshal(map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"clusters":        []any{map[string]any{"name": "c", "cluster": map[string]any{"server": k.srv.URL, "insecure-skip-tls-verify": true}}},
		"users":           []any{map[string]any{"name": "sa", "user": map[string]any{"token": token}}},
		"contexts":        []any{map[string]any{"name": "c", "context": map[string]any{"cluster": "c", "user": "sa"}}},
		"current-context": "c",
	})
	if err := os.WriteFile(kc, kcData, 0o600); err != nil {
		t.Fatal(err)
	}

	// The config file at a local path instead of the mount.
	cfgFile := filepath.Join(dir, "catalogsync.yaml")
	if err := os.WriteFile(cfgFile, []byte(configMapData(t, objs, "catalogsync")["catalogsync.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range c.Args[1:] {
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + cfgFile
		}
		args = append(args, a)
	}
	port := freeport.Port(t)
	// Flags given later win: test-local address, store and credentials.
	args = append([]string{"serve"}, append(args,
		"--addr=127.0.0.1:"+strconv.Itoa(port), "--store="+filepath.Join(dir, "store"), "--kubeconfig="+kc)...)

	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	for name, val := range containerEnv(t, objs, c) {
		switch {
		case strings.HasPrefix(name, "CATALOGSYNC_S3_"):
			continue
		case name == "CATALOGSYNC_TMP_DIR":
			val = dir
		case val == "":
			val = "test-value-of-" + name // a Secret's key
		}
		env = append(env, name+"="+val)
	}

	cmd := exec.Command(catalogsyncBinary(t), args...)
	cmd.Env = env
	var logs logbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	ready := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !ready; {
		select {
		case err := <-exited:
			t.Fatalf("catalogsync serve %v exited: %v\n%s", args, err, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz")
		if err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
	}
	if !ready {
		t.Fatalf("catalogsync serve never became ready:\n%s", logs.String())
	}

	// The image's host does not exist, so the sync fails; what matters is
	// that the failure reaches the object's status.
	k.must([]byte(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: `+ccName+`
spec:
  source:
    type: Image
    image:
      ref: registry.example.test/catalogsync/catalog:v1
`), "apply", "--server-side", "-f", "-")
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		// A refusal is retried forever by serve; no point waiting it out.
		if strings.Contains(logs.String(), "forbidden") {
			t.Fatalf("serve was refused by RBAC:\n%s", logs.String())
		}
		out := k.must(nil, "get", "clustercatalog", ccName, "-o", "json")
		last = out
		var cc struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Reason string `json:"reason"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &cc); err != nil {
			t.Fatal(err)
		}
		progressing := false
		for _, cond := range cc.Status.Conditions {
			progressing = progressing || cond.Type == "Progressing"
		}
		if progressing && cc.Metadata.Labels["olm.operatorframework.io/metadata.name"] == ccName {
			return
		}
	}
	t.Fatalf("serve did not label the ClusterCatalog and write its status; last object:\n%s\nserve's log:\n%s", last, logs.String())
}
