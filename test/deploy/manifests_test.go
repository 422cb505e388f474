// Package deploy_test checks the manifests in deploy/: they parse, the
// kustomize overlays render, the real kube-apiserver accepts every
// Kubernetes object, the Knative objects decode strictly into structs that
// mirror the Knative API fields used, the workloads' flags and env vars are
// ones the real binary accepts, and the RBAC is least-privilege.
package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	namespace = "catalogsync-system"
	// The overlays are built by the kustomizations in these folders.
	knativeDir = "knative"
	plainDir   = "plain"
)

// overlays are the folders a user applies with kubectl apply -k.
var overlays = []string{"quickstart", plainDir, knativeDir, "tls-cert-manager", "tls-openshift", "knative-tls"}

// kustomizeDirs hold Kubernetes manifests (every document an object);
// other folders under deploy/ may hold other YAML (deploy/local).
var kustomizeDirs = append([]string{"crd", "base", "components", readerDir}, overlays...)

// readerDir serves from zero with catalogsync-reader (reader_test.go).
const readerDir = "reader"

// repoRoot is the module root: go test runs in the package's folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func deployDir(t testing.TB) string { return filepath.Join(repoRoot(t), "deploy") }

// object is one parsed document, with its source for error messages and
// for applying it alone.
type object struct {
	raw    []byte
	fields map[string]any
	from   string
}

func (o object) apiVersion() string { s, _ := o.fields["apiVersion"].(string); return s }
func (o object) kind() string       { s, _ := o.fields["kind"].(string); return s }
func (o object) name() string {
	m, _ := o.fields["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}
func (o object) namespace() string {
	m, _ := o.fields["metadata"].(map[string]any)
	s, _ := m["namespace"].(string)
	return s
}
func (o object) group() string {
	if g, _, ok := strings.Cut(o.apiVersion(), "/"); ok {
		return g
	}
	return ""
}
func (o object) String() string { return o.from + ": " + o.kind() + " " + o.name() }

// isKnative reports objects of Knative's API groups, whose fields the
// typed decode in workloads_test.go checks.
func (o object) isKnative() bool { return strings.HasSuffix(o.group(), ".knative.dev") }

// parseDocs splits a multi-document YAML stream and parses every document;
// empty documents (comments only) are skipped.
func parseDocs(b []byte, from string) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, errors.New(from + ": document " + strconv.Itoa(i) + ": " + err.Error())
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, object{raw: doc, fields: m, from: from})
	}
}

// yamlFiles lists every .yaml/.yml file under dir.
func yamlFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// manifestFiles are the object files of the kustomize folders, without
// the kustomization.yaml files themselves.
func manifestFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, d := range kustomizeDirs {
		for _, f := range yamlFiles(t, filepath.Join(deployDir(t), d)) {
			if filepath.Base(f) != "kustomization.yaml" {
				out = append(out, f)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no manifests found under deploy/")
	}
	return out
}

func readObjects(t testing.TB, path string) []object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(repoRoot(t), path)
	objs, err := parseDocs(b, rel)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return objs
}

func kubectl(t testing.TB) string {
	t.Helper()
	return servers.Binary(t, "kubectl")
}

var (
	renderMu    sync.Mutex
	renderCache = map[string][]object{}
)

// render runs `kubectl kustomize deploy/<overlay>` and parses the result.
func render(t testing.TB, overlay string) []object {
	t.Helper()
	return kustomize(t, "deploy/"+overlay, filepath.Join(deployDir(t), overlay))
}

// combo is an overlay a user writes: a folder of deploy/ as its resource
// and components of deploy/components.
type combo struct {
	resource   string
	components []string
}

func (c combo) String() string { return c.resource + "+" + strings.Join(c.components, "+") }

// combos are the compositions the README names, rendered from a
// kustomization written as a user writes it.
var combos = []combo{
	{plainDir, []string{"webhooks"}},
	{knativeDir, []string{"webhooks"}},
	{"knative-tls", []string{"webhooks"}},
	{"tls-openshift", []string{"webhooks"}},
	{"quickstart", []string{"tls", "tls-cert-manager"}},
}

// renderCombo writes c's kustomization into a temporary folder beside
// deploy/ (kustomize takes only relative paths) and renders it.
func renderCombo(t testing.TB, c combo) []object {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(repoRoot(t), "test", "deploy", "testdata"), "overlay-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	k := "resources: [../../../../deploy/" + c.resource + "]\ncomponents:\n"
	for _, comp := range c.components {
		k += "  - ../../../../deploy/components/" + comp + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return kustomize(t, c.String(), dir)
}

// kustomize runs `kubectl kustomize dir` once per name and parses the result.
func kustomize(t testing.TB, name, dir string) []object {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if objs, ok := renderCache[name]; ok {
		return objs
	}
	cmd := exec.Command(kubectl(t), "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", name, err, stderr.Bytes())
	}
	objs, err := parseDocs(out, "kustomize "+name)
	if err != nil {
		t.Fatalf("rendered %s: %v", name, err)
	}
	renderCache[name] = objs
	return objs
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o, true
		}
	}
	return object{}, false
}

func kindsOf(objs []object) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[o.apiVersion()+" "+o.kind()]++
	}
	return m
}

// TestYAMLParses parses every YAML file under deploy/ (all documents);
// in the kustomize folders every document must be a named object.
func TestYAMLParses(t *testing.T) {
	files := yamlFiles(t, deployDir(t))
	for _, f := range files {
		objs := readObjects(t, f)
		rel, _ := filepath.Rel(deployDir(t), f)
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		inKustomize := false
		for _, d := range kustomizeDirs {
			inKustomize = inKustomize || d == top
		}
		if !inKustomize {
			continue
		}
		if len(objs) == 0 {
			t.Errorf("%s: no documents", rel)
		}
		for _, o := range objs {
			if o.apiVersion() == "" || o.kind() == "" {
				t.Errorf("%s: a document without apiVersion or kind", rel)
			}
			if filepath.Base(f) != "kustomization.yaml" && o.name() == "" {
				t.Errorf("%s: %s without metadata.name", rel, o.kind())
			}
		}
	}
}

// TestOverlaysRender renders every overlay and the documented
// compositions with kubectl's kustomize and checks each holds the objects
// it exists for, in catalogsync's namespace.
func TestOverlaysRender(t *testing.T) {
	common := []string{
		"v1 Namespace", "apiextensions.k8s.io/v1 CustomResourceDefinition", "v1 ServiceAccount",
		"rbac.authorization.k8s.io/v1 ClusterRole", "rbac.authorization.k8s.io/v1 ClusterRoleBinding", "v1 ConfigMap",
	}
	knative := []string{
		"serving.knative.dev/v1 Service", "eventing.knative.dev/v1 Broker", "eventing.knative.dev/v1 Trigger",
		"sources.knative.dev/v1 PingSource", "sources.knative.dev/v1 ApiServerSource", "v1 Secret",
	}
	plain := []string{"apps/v1 Deployment", "v1 Service", "policy/v1 PodDisruptionBudget", "v1 Secret"}
	want := map[string][]string{
		"quickstart":       {"apps/v1 Deployment", "v1 Service", "v1 PersistentVolumeClaim"},
		plainDir:           plain,
		knativeDir:         knative,
		"tls-cert-manager": append([]string{"cert-manager.io/v1 Certificate"}, plain...),
		"tls-openshift":    plain,
		"knative-tls":      knative,
	}
	if len(want) != len(overlays) {
		t.Fatalf("overlays %v, checked %v", overlays, want)
	}
	rendered := map[string][]object{}
	for _, o := range overlays {
		rendered["deploy/"+o] = render(t, o)
	}
	for _, c := range combos {
		rendered[c.String()] = renderCombo(t, c)
	}
	for name, objs := range rendered {
		got := kindsOf(objs)
		for _, k := range append(common, want[strings.Split(strings.TrimPrefix(name, "deploy/"), "+")[0]]...) {
			if got[k] == 0 {
				t.Errorf("%s renders no %s; it renders %v", name, k, got)
			}
		}
		for _, o := range objs {
			// Cluster-scoped kinds have no namespace; all others must land
			// in catalogsync-system, not the kubectl context's namespace.
			switch o.kind() {
			case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
			default:
				if o.namespace() != namespace {
					t.Errorf("%s: %s is in namespace %q, want %q", name, o, o.namespace(), namespace)
				}
			}
		}
	}
	if _, ok := find(render(t, knativeDir), "Deployment", "catalogsync"); ok {
		t.Error("deploy/knative also renders the plain Deployment")
	}
}

// serveHelp is what `catalogsync serve -h` prints, from a binary built
// from this checkout.
var (
	helpOnce sync.Once
	helpText string
	helpErr  error
	binPath  string
)

func catalogsyncBinary(t testing.TB) string {
	t.Helper()
	helpOnce.Do(func() {
		dir, err := servers.ProcessTempDir("catalogsync-deploy-test")
		if err != nil {
			helpErr = err
			return
		}
		binPath = filepath.Join(dir, "catalogsync")
		if p := os.Getenv(servers.BinaryEnv); p != "" && os.Getenv(servers.RaceEnv) != "1" {
			// The suite's one build of this checkout (test/run.sh): a
			// link of its own costs seconds of CPU.
			if _, err := os.Stat(p); err != nil {
				helpErr = fmt.Errorf("%s: %w", servers.BinaryEnv, err)
				return
			}
			binPath = p
		} else {
			cmd := exec.Command("go", "build", "-o", binPath, "./cmd/catalogsync")
			cmd.Dir = repoRoot(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				helpErr = errors.New("go build ./cmd/catalogsync: " + err.Error() + "\n" + string(out))
				return
			}
		}
		// -h makes flag parsing fail on purpose (exit 2); the text is what
		// matters.
		out, _ := exec.Command(binPath, "serve", "-h").CombinedOutput()
		helpText = string(out)
		if !strings.Contains(helpText, "Usage: catalogsync serve") {
			helpErr = errors.New("catalogsync serve -h printed no usage:\n" + helpText)
		}
	})
	if helpErr != nil {
		t.Fatal(helpErr)
	}
	return binPath
}

func serveHelp(t testing.TB) string {
	t.Helper()
	catalogsyncBinary(t)
	return helpText
}

// flagLine is one flag of kong's help: "  -h, --help" or "      --name=VALUE";
// continuation lines of a help text are indented further.
var flagLine = regexp.MustCompile(`(?m)^ {2,6}(?:-[a-z], )?--([a-z0-9-]+)(=\S+)?`)

// serveFlags maps each flag of `serve -h` to whether it takes a value.
func serveFlags(t testing.TB) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(serveHelp(t), -1) {
		flags[m[1]] = m[2] != "" // kong prints no =VALUE for bools
	}
	if len(flags) < 10 || !flags["config"] || flags["clustercatalogs"] {
		t.Fatalf("could not read serve's flags from its -h output (got %v):\n%s", flags, serveHelp(t))
	}
	return flags
}

var envName = regexp.MustCompile(`\bCATALOGSYNC_[A-Z0-9_]+\b|\bKUBECONFIG\b|\bPORT\b`)

// documentedEnv is every env var name `serve -h` mentions.
func documentedEnv(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, n := range envName.FindAllString(serveHelp(t), -1) {
		out[n] = true
	}
	if !out["CATALOGSYNC_S3_BUCKET"] || !out["CATALOGSYNC_BASE_URL"] {
		t.Fatalf("serve -h documents no CATALOGSYNC_S3_BUCKET or CATALOGSYNC_BASE_URL; got %v", out)
	}
	return out
}

// envFromElsewhere are the names the workloads may set that serve -h does
// not list, each documented by what reads it.
var envFromElsewhere = map[string]string{
	"AWS_ACCESS_KEY_ID":     "storage/s3's credential chain (docs/settings.md, Object storage)",
	"AWS_SECRET_ACCESS_KEY": "storage/s3's credential chain (docs/settings.md, Object storage)",
	"GOMEMLIMIT":            "the Go runtime's soft memory limit",
	"POD_NAME":              "the default of --replica-id (serve -h names it as $POD_NAME)",
}
