package docblocks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// blockLimit bounds one block; the first `go run` of a block compiles.
const blockLimit = 10 * time.Minute

func TestParseMarksAndExpectations(t *testing.T) {
	const doc = "# t\n\n```sh test\necho a\n```\n\n```text\nA …\n\nB\n```\n\n```sh\nnot run\n```\n```text\nnot an expectation\n```\n\n```sh test\necho c\n```\n\nprose\n\n```text\nnot its output\n```\n"
	p := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	bs, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Line != 3 || bs[0].Script != "echo a\n" || strings.Join(bs[0].Expect, "|") != "A …|B" ||
		bs[1].Script != "echo c\n" || len(bs[1].Expect) != 0 {
		t.Fatalf("blocks %+v", bs)
	}
	if m := bs[0].Missing("x\nA 1 2\nB\n"); m != "" {
		t.Errorf("missing %q", m)
	}
	if m := bs[0].Missing("B\nA 1\n"); m != "B" {
		t.Errorf("out of order: missing %q, want B", m)
	}
	if err := os.WriteFile(p, []byte("```sh test\necho\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(p); err == nil || !strings.Contains(err.Error(), "never closed") {
		t.Errorf("open fence: %v", err)
	}
}

// A failing block fails, and a server it leaves in the background ends
// with it.
func TestRunEndsTheBlocksProcesses(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := Block{Script: "sleep 300 &\necho $! > " + pidFile + "\nfalse\n"}
	if _, err := Run(context.Background(), b, t.TempDir(), nil, time.Minute); err == nil {
		t.Fatal("a block ending in false passed")
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		t.Errorf("the background sleep (%s) still runs", strings.TrimSpace(string(pid)))
	}
}

// runBlocks runs each block of file in dir, in order, failing on a block
// that exits non-zero or lacks an expected line of output. A non-nil
// rewrite is applied to each script first.
func runBlocks(t *testing.T, file, dir string, env []string, rewrite *strings.Replacer) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Skipf("%s has no block fenced with \"sh test\"", file)
	}
	for _, b := range blocks {
		b.File = file
		if rewrite != nil {
			b.Script = rewrite.Replace(b.Script)
		}
		out, err := Run(context.Background(), b, dir, env, blockLimit)
		if err != nil {
			t.Fatalf("%s: the block failed (%v):\n%s\noutput:\n%s", b, err, b.Script, last(out, 4000))
		}
		if m := b.Missing(out); m != "" {
			t.Fatalf("%s: the output lacks the expected line %q:\n%s\noutput:\n%s", b, m, b.Script, last(out, 4000))
		}
		t.Logf("%s: ok", b)
	}
}

func last(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// The README's marked blocks, run from the repository's root as a user
// who cloned it would: the embedded defaults, the example config.
func TestREADMEBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run and a server: not under -short")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	// The README serves on the port users know; the test on a free one,
	// so that whatever else listens on 8080 here cannot answer for it.
	runBlocks(t, "README.md", root, nil, strings.NewReplacer("127.0.0.1:8080", freeport.Addr(t)))
}

// docs/olm.md's marked blocks against what a cluster would have: a real
// kube-apiserver, a registry holding the catalog image, the Secret
// cert-manager would issue (tls.crt, tls.key, ca.crt), and catalogsync
// serving HTTPS with those files and --clustercatalogs, as the TLS
// overlays run it (test/e2e's operator-controller contract test uses the
// same endpoint).
func TestOLMBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, a registry and catalogsync: not under -short")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	kube := servers.StartKube(t)
	kubectl := servers.Binary(t, "kubectl")
	reg := servers.StartRegistry(t)
	image := reg.Host + "/acme/operators:v1"
	if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), image,
		imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs")); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	authority := tlstest.NewCA(t, "olmv1-ca")
	crt, key := authority.Issue(t, 1, false)
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.pem": authority.PEM} {
		tlstest.WriteAtomic(t, filepath.Join(dir, name), b)
	}
	env := []string{"KUBECONFIG=" + kube.Kubeconfig, "PATH=" + filepath.Dir(kubectl) + ":" + os.Getenv("PATH"), "CATALOG_IMAGE=" + image}
	// The CRD first: serve waits for its informers at start. The doc's
	// step applying it again must then still say it is established.
	setup := Block{File: "setup", Script: fmt.Sprintf(`kubectl apply -f %[2]s/deploy/crd/clustercatalog.yaml
kubectl wait --for condition=Established --timeout 60s crd/clustercatalogs.olm.operatorframework.io
kubectl create namespace catalogsync-system
kubectl -n catalogsync-system create secret generic catalogsync-service-cert --from-file=tls.crt=%[1]s/tls.crt --from-file=tls.key=%[1]s/tls.key --from-file=ca.crt=%[1]s/ca.pem
`, dir, root)}
	if out, err := Run(context.Background(), setup, dir, env, time.Minute); err != nil {
		t.Fatalf("the cluster's Secret: %v\n%s", err, out)
	}
	addr := servers.FreeAddr(t)
	servers.StartCatalogsyncAt(t, addr, []string{"--store", filepath.Join(dir, "store"), "--no-docker-config",
		"--clustercatalogs", "--kubeconfig", kube.Kubeconfig, "--base-url", "https://" + addr,
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key"),
		"--plain-http", reg.Host})

	// The doc's commands run in a checkout of this repository.
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(work, "deploy")); err != nil {
		t.Fatal(err)
	}
	runBlocks(t, "docs/olm.md", work, env, nil)
}
