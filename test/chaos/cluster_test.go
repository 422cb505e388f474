package chaos

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"
	"github.com/regclient/regclient/scheme/reg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Secrets the replicas and the client share.
const (
	hookSecret  = "chaos-registry-notify-secret"
	ciSecret    = "chaos-ci-hmac-secret"
	apiToken    = "chaos-api-token"
	eventsToken = "chaos-events-token"
	s3User      = "catalogsync"
	s3Secret    = "catalogsync-secret-key"
	bucket      = "catalogs"
)

// replica is one catalogsync serve process on its own host.
type replica struct {
	i    int
	host *host
	url  string
	p    *proc
}

// cluster is every server of the partition suite, each on its host.
type cluster struct {
	t          *testing.T
	tp         *topology
	dir        string
	minio      *proc
	etcd, api  *proc
	registry   *proc
	replicas   []*replica
	stores     []*storeProxy // replica i reaches MinIO through stores[i]
	kubeconfig string
	regHost    string // ip:port, the registry's name in image references
	bin        string // catalogsync
	rc         *regclient.RegClient
	dyn        dynamic.Interface
	http       *http.Client // the client host's
	front      *front
	rec        *recorder
}

// replicaArgs are what every replica runs with besides its own
// addresses; chaos_test's planted-bug test builds another binary.
func newCluster(t *testing.T, rec *recorder, bin string) *cluster {
	t.Helper()
	tp := newTopology(t)
	c := &cluster{t: t, tp: tp, dir: t.TempDir(), bin: bin, rec: rec,
		regHost: tp.host("registry").ip + ":5000"}
	c.http = nsClient(tp.host("client").ns, 30*time.Second)
	c.startMinIO()
	c.startKube()
	c.startRegistry()
	rcfg, err := kubeclient.Config(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rcfg.Dial = dialer(tp.host("client").ns)
	if c.dyn, err = dynamic.NewForConfig(rcfg); err != nil {
		t.Fatal(err)
	}
	c.installCRD()
	h := config.HostNewName(c.regHost)
	h.TLS = config.TLSDisabled
	c.rc = regclient.New(regclient.WithConfigHost(*h), regclient.WithUserAgent("chaos-ci"),
		regclient.WithRegOpts(reg.WithTransport(nsTransport(tp.host("client").ns))))
	c.writeReplicaConfig()
	for i := range 3 {
		c.stores = append(c.stores, newStoreProxy(t, tp, i, rec))
		r := &replica{i: i, host: tp.host(fmt.Sprintf("r%d", i))}
		r.url = "http://" + r.host.ip + ":8080"
		c.replicas = append(c.replicas, r)
		c.setupReplica(r)
		if err := r.p.start(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.p.stop)
	}
	c.front = newFront(t, tp.host("client"), c.replicas)
	return c
}

func repoRoot() string {
	p, _ := filepath.Abs("../..")
	return p
}

func (c *cluster) startMinIO() {
	h := c.tp.host("minio")
	dir := filepath.Join(c.dir, "minio")
	c.minio = &proc{name: "minio", ns: h.ns, path: servers.Binary(c.t, "minio"),
		args: []string{"server", filepath.Join(dir, "data"), "--address", h.ip + ":9000",
			"--console-address", h.ip + ":9001", "--certs-dir", filepath.Join(dir, "certs")},
		env:     []string{"MINIO_ROOT_USER=" + s3User, "MINIO_ROOT_PASSWORD=" + s3Secret, "MINIO_BROWSER=off", "MINIO_UPDATE=off"},
		logPath: filepath.Join(c.dir, "minio.log"),
		ready:   httpReady(h.ns, "http://"+h.ip+":9000/minio/health/ready", nil),
	}
	if err := c.minio.start(90 * time.Second); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(c.minio.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s3c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + h.ip + ":9000"), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s3User, s3Secret, ""),
		HTTPClient:  nsClient(h.ns, 30*time.Second),
	})
	// MinIO answers its readiness probe before its object layer is up
	// (503 XMinioServerNotInitialized) on a busy machine: retry, bounded.
	for {
		_, err := s3c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			c.t.Fatalf("create bucket: %v", err)
		}
		sleep(ctx, time.Second)
	}
}

func (c *cluster) startKube() {
	h := c.tp.host("kube")
	dir := filepath.Join(c.dir, "kube")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.etcd = &proc{name: "etcd", ns: h.ns, path: servers.Binary(c.t, "etcd"),
		args: []string{"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
			"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
			"--initial-cluster", "default=http://127.0.0.1:2380", "--unsafe-no-fsync"},
		logPath: filepath.Join(c.dir, "etcd.log"),
		ready:   httpReady(h.ns, "http://127.0.0.1:2379/health", nil),
	}
	if err := c.etcd.start(60 * time.Second); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(c.etcd.stop)
	token := "chaos-admin-token"
	write(c.t, filepath.Join(dir, "tokens.csv"), token+",admin,admin,\"system:masters\"\n")
	writeSAKey(c.t, filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub"))
	url := "https://" + h.ip + ":6443"
	c.api = &proc{name: "kube-apiserver", ns: h.ns, path: servers.Binary(c.t, "kube-apiserver"),
		args: []string{"--etcd-servers", "http://127.0.0.1:2379", "--cert-dir", filepath.Join(dir, "certs"),
			"--secure-port", "6443", "--bind-address", h.ip, "--advertise-address", h.ip,
			"--service-cluster-ip-range", "198.19.0.0/24", "--authorization-mode=RBAC",
			"--token-auth-file", filepath.Join(dir, "tokens.csv"),
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", filepath.Join(dir, "sa.pub"),
			"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
			"--disable-admission-plugins=ServiceAccount"},
		logPath: filepath.Join(c.dir, "kube-apiserver.log"),
		ready:   httpReady(h.ns, url+"/readyz", http.Header{"Authorization": {"Bearer " + token}}),
	}
	if err := c.api.start(120 * time.Second); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(c.api.stop)
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "chaos",
		"clusters": []any{map[string]any{"name": "chaos", "cluster": map[string]any{"server": url, "insecure-skip-tls-verify": true}}},
		"users":    []any{map[string]any{"name": "admin", "user": map[string]any{"token": token}}},
		"contexts": []any{map[string]any{"name": "chaos", "context": map[string]any{"cluster": "chaos", "user": "admin"}}},
	}
	b, _ := yaml.Marshal(cfg)
	write(c.t, c.kubeconfig, string(b))
}

func (c *cluster) startRegistry() {
	h := c.tp.host("registry")
	var endpoints []any
	for i := range 3 {
		endpoints = append(endpoints, map[string]any{
			"name": fmt.Sprintf("r%d", i), "url": fmt.Sprintf("http://%s:8080/hooks/registry", c.tp.host(fmt.Sprintf("r%d", i)).ip),
			"headers": map[string][]string{"Authorization": {hookSecret}}, "timeout": "3s", "threshold": 3, "backoff": "1s",
		})
	}
	cfg := map[string]any{
		"version": "0.1",
		"log":     map[string]any{"level": "info", "formatter": "text", "accesslog": map[string]any{"disabled": true}},
		"storage": map[string]any{"filesystem": map[string]any{"rootdirectory": filepath.Join(c.dir, "registry")},
			"delete": map[string]any{"enabled": true}, "maintenance": map[string]any{"uploadpurging": map[string]any{"enabled": false}}},
		"http":          map[string]any{"addr": c.regHost, "secret": "chaos-registry", "draintimeout": "1s"},
		"notifications": map[string]any{"events": map[string]any{"includereferences": true}, "endpoints": endpoints},
	}
	b, _ := yaml.Marshal(cfg)
	path := filepath.Join(c.dir, "registry.yml")
	write(c.t, path, string(b))
	c.registry = &proc{name: "registry", ns: h.ns, path: servers.Binary(c.t, "registry"), args: []string{"serve", path},
		env: []string{"OTEL_TRACES_EXPORTER=none"}, logPath: filepath.Join(c.dir, "registry.log"),
		ready: httpReady(h.ns, "http://"+c.regHost+"/v2/", nil)}
	if err := c.registry.start(60 * time.Second); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(c.registry.stop)
}

func (c *cluster) writeReplicaConfig() {
	write(c.t, filepath.Join(c.dir, "catalogsync.yaml"), fmt.Sprintf(`registries:
- name: %[1]s
  plainHTTP: true
webhooks:
  receivers:
  - name: registry
    type: distribution
    secret: env:REGISTRY_HOOK_SECRET
  - name: ci
    type: generic
    secret: env:CI_HOOK_SECRET
    host: %[1]s
events:
  token: %[2]s
`, c.regHost, eventsToken))
}

func (c *cluster) setupReplica(r *replica) {
	name := fmt.Sprintf("r%d", r.i)
	tmp := filepath.Join(c.dir, name+"-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		c.t.Fatal(err)
	}
	r.p = &proc{name: "catalogsync " + name, ns: r.host.ns, path: c.bin,
		args: []string{"serve", "--addr", r.host.ip + ":8080", "--log-level", "debug",
			"--config", filepath.Join(c.dir, "catalogsync.yaml"),
			"--clustercatalogs", "--kubeconfig", c.kubeconfig,
			"--base-url", r.url,
			"--s3-bucket", bucket, "--s3-endpoint", c.stores[r.i].url, "--s3-region", "us-east-1", "--s3-path-style",
			"--no-docker-config", "--poll-check-interval", "1h",
			"--gc-interval", "20s", "--gc-grace", "5s", "--gc-keep", "1",
			"--replica-id", name, "--tmp-dir", tmp},
		env: []string{"REGISTRY_HOOK_SECRET=" + hookSecret, "CI_HOOK_SECRET=" + ciSecret,
			"CATALOGSYNC_API_TOKEN=" + apiToken, "AWS_ACCESS_KEY_ID=" + s3User, "AWS_SECRET_ACCESS_KEY=" + s3Secret},
		logPath: filepath.Join(c.dir, name+".log"),
		ready:   httpReady(r.host.ns, r.url+"/readyz", nil),
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRD creates the ClusterCatalog CRD and waits until it is
// established.
func (c *cluster) installCRD() {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "deploy/crd/clustercatalog.yaml"))
	if err != nil {
		c.t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := c.dyn.Resource(crdGVR)
	if _, err := res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create the ClusterCatalog CRD: %v", err)
	}
	for ctx.Err() == nil {
		u, err := res.Get(ctx, "clustercatalogs.olm.operatorframework.io", metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, x := range conds {
				if m, _ := x.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
	c.t.Fatal("the ClusterCatalog CRD was not established within 2 minutes")
}

// createCatalog creates a ClusterCatalog of image.
func (c *cluster) createCatalog(ctx context.Context, name, image string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "olm.operatorframework.io/v1",
		"kind":       "ClusterCatalog",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": image}}},
	}}
	_, err := c.dyn.Resource(status.GVR).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// gc runs one `catalogsync gc` pass from replica i's host, through its
// way to the store.
func (c *cluster) gc(ctx context.Context, i int) error {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", c.replicas[i].host.ns, c.bin, "gc",
		"--s3-bucket", bucket, "--s3-endpoint", c.stores[i].url, "--s3-region", "us-east-1", "--s3-path-style",
		"--keep", "1", "--grace", "5s")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3User, "AWS_SECRET_ACCESS_KEY="+s3Secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("gc: %v: %s", err, lastLine(out))
	}
	return nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeSAKey(t testing.TB, keyPath, pubPath string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	write(t, pubPath, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}
