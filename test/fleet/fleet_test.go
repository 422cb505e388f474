// Package fleet checks a fleet deploy against real servers: one
// deployment syncs catalogs into a MinIO bucket, and an agent in each
// member cluster (a kube-apiserver of its own) writes its ClusterCatalogs'
// status from the bucket's published pointers, told by MinIO's bucket
// notifications or by polling.
package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	catalogName = "community"
	notifyToken = "fleet-notify-token"
	// waitFor bounds every wait on a server; nothing is asserted on how
	// long one took.
	waitFor = 2 * time.Minute
)

var root, _ = filepath.Abs("../..")

// cluster is one member cluster: its apiserver, a client and its agents.
type cluster struct {
	kube   *servers.KubeAPIServer
	res    dynamic.ResourceInterface
	agents []*servers.Catalogsync
}

// fleet is the servers of one test.
type fleet struct {
	t        *testing.T
	reg      *servers.Registry
	proxy    *servers.Proxy // in front of reg: the sync's only way to it
	minio    *servers.MinIO
	bucket   string
	image    string // the catalog's reference, through the proxy
	clusters []*cluster
}

// options of a fleet: how agents follow pointers.
type options struct {
	clusters     int
	agentsEach   int
	notify       bool          // MinIO's webhook target per agent
	pollInterval time.Duration // the agents' --pointer-poll-interval
	readOnly     bool          // agents get read-only bucket credentials
}

// startFleet starts a registry behind a counting proxy, the member
// clusters with the ClusterCatalog CRD and one ClusterCatalog each,
// MinIO (with a webhook target per agent when o.notify) and the agents.
func startFleet(t *testing.T, o options) *fleet {
	t.Helper()
	f := &fleet{t: t, reg: servers.StartRegistry(t)}
	f.proxy = servers.NewProxy(t, f.reg.URL)
	f.image = f.proxy.Host + "/acme/catalog:v1"
	// The clusters outlive the test: each test leaves them without its
	// ClusterCatalog, and the next one starts in a second, not in ten.
	for _, k := range servers.SharedKubes(t, o.clusters) {
		f.clusters = append(f.clusters, startCluster(t, k))
	}
	addrs := make([][]string, o.clusters)
	var minioOpts []servers.MinIOOption
	var arns []string
	for i := range f.clusters {
		for j := range o.agentsEach {
			addr := servers.FreeAddr(t)
			addrs[i] = append(addrs[i], addr)
			if o.notify {
				id := fmt.Sprintf("C%dA%d", i, j)
				minioOpts = append(minioOpts, servers.WithWebhookTarget(id, "http://"+addr+"/events", notifyToken))
				arns = append(arns, servers.WebhookARN(id))
			}
		}
	}
	f.minio = servers.StartMinIO(t, minioOpts...)
	f.bucket = f.minio.NewBucket(t)
	f.allowAnonymousReads(t)
	keys := f.rootEnv()
	if o.readOnly {
		keys = f.readOnlyEnv(t)
	}
	for i, c := range f.clusters {
		c.create(t, catalogName, f.image)
		for _, addr := range addrs[i] {
			c.agents = append(c.agents, f.startAgent(t, c, addr, o.pollInterval, keys))
		}
	}
	if o.notify {
		f.notifyOnPointers(t, arns)
	}
	return f
}

func startCluster(t *testing.T, k *servers.KubeAPIServer) *cluster {
	t.Helper()
	kubectl := servers.Binary(t, "kubectl")
	for _, args := range [][]string{
		{"apply", "-f", filepath.Join(root, "deploy/crd/clustercatalog.yaml")},
		{"wait", "--for", "condition=Established", "--timeout", "60s", "crd/clustercatalogs.olm.operatorframework.io"},
	} {
		if out, err := exec.Command(kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	cfg, err := kubeclient.Config(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{kube: k, res: dyn.Resource(status.GVR)}
}

func (c *cluster) create(t *testing.T, name, image string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(fmt.Appendf(nil, `apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: %s
spec:
  source:
    type: Image
    image:
      ref: %s
`, name, image), &obj); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterCatalog: %v", err)
	}
	// Registered before the agents start, so it runs after they stop.
	t.Cleanup(func() { c.remove(t, name) })
}

// remove deletes the ClusterCatalog name and waits until it is gone, so
// the next test sharing the cluster can create it afresh.
func (c *cluster) remove(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.res.Delete(ctx, name, metav1.DeleteOptions{})
	for ; err == nil; time.Sleep(50 * time.Millisecond) {
		_, err = c.res.Get(ctx, name, metav1.GetOptions{})
	}
	if !apierrors.IsNotFound(err) {
		t.Errorf("delete ClusterCatalog %s: %v", name, err)
	}
}

// s3Args are the store flags of every catalogsync process of the fleet.
func (f *fleet) s3Args() []string {
	return []string{"--s3-bucket", f.bucket, "--s3-endpoint", f.minio.Endpoint, "--s3-region", f.minio.Region, "--s3-path-style"}
}

func (f *fleet) rootEnv() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + f.minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + f.minio.SecretKey}
}

// baseURL is where clients read catalogs: the bucket itself.
func (f *fleet) baseURL() string { return f.minio.Endpoint + "/" + f.bucket }

func (f *fleet) startAgent(t *testing.T, c *cluster, addr string, poll time.Duration, keys []string) *servers.Catalogsync {
	t.Helper()
	args := append([]string{"--kubeconfig", c.kube.Kubeconfig, "--base-url", f.baseURL(),
		"--pointer-poll-interval", poll.String()}, f.s3Args()...)
	env := slices.Concat(keys, []string{"CATALOGSYNC_NOTIFY_TOKEN=" + notifyToken})
	return servers.StartCatalogsyncCommand(t, "agent", addr, args, env...)
}

// notifyOnPointers sends the bucket's pointer writes and deletions to the
// webhook targets.
func (f *fleet) notifyOnPointers(t *testing.T, arns []string) {
	t.Helper()
	var qs []s3types.QueueConfiguration
	for _, arn := range arns {
		qs = append(qs, s3types.QueueConfiguration{
			QueueArn: aws.String(arn),
			Events:   []s3types.Event{"s3:ObjectCreated:*", "s3:ObjectRemoved:*"},
			Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{
				{Name: s3types.FilterRuleNamePrefix, Value: aws.String("catalogs/")},
				{Name: s3types.FilterRuleNameSuffix, Value: aws.String("/current")},
			}}},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.minio.Admin().PutBucketNotificationConfiguration(ctx, &awss3.PutBucketNotificationConfigurationInput{
		Bucket:                    aws.String(f.bucket),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: qs},
	}); err != nil {
		t.Fatalf("bucket notification configuration: %v", err)
	}
}

// allowAnonymousReads lets anyone GET the static read layout, and nothing
// else, as operator-controller reads it (docs/fleet.md).
func (f *fleet) allowAnonymousReads(t *testing.T) {
	t.Helper()
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},`+
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/catalogs/*/api/v1/*"]}]}`, f.bucket)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.minio.Admin().PutBucketPolicy(ctx, &awss3.PutBucketPolicyInput{Bucket: aws.String(f.bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatalf("bucket policy: %v", err)
	}
}

// push pushes the catalog image, its config labelled with seq so each
// push is a new digest (its layer is the same), and returns the digest.
func (f *fleet) push(t *testing.T, seq int) string {
	t.Helper()
	img := imagebuild.FromDir(filepath.Join(root, "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs")
	img.Labels["push"] = fmt.Sprint(seq)
	digest, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(f.reg.Host), f.reg.Host+"/acme/catalog:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// publish runs one `catalogsync sync` of the catalog into the bucket,
// through the proxy, and returns when it has exited.
func (f *fleet) publish(t *testing.T) {
	t.Helper()
	args := append([]string{"sync", "--name", catalogName, "--image", f.image, "--static-layout",
		"--plain-http", f.proxy.Host, "--no-docker-config", "--registries-conf", ""}, f.s3Args()...)
	cmd := exec.Command(servers.CatalogsyncBinary(t), args...)
	cmd.Env = append(os.Environ(), f.rootEnv()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("catalogsync sync: %v\n%s", err, out.Bytes())
	}
}

// served is what a cluster's ClusterCatalog status says is served.
type served struct {
	serving, progressing string // status/reason
	ref, base            string
}

func (c *cluster) served(t *testing.T) served {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := c.res.Get(ctx, catalogName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ClusterCatalog: %v", err)
	}
	var s served
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m, _ := raw.(map[string]any)
		v := fmt.Sprintf("%v/%v", m["status"], m["reason"])
		switch m["type"] {
		case status.TypeServing:
			s.serving = v
		case status.TypeProgressing:
			s.progressing = v
		}
	}
	s.ref, _, _ = unstructured.NestedString(u.Object, "status", "resolvedSource", "image", "ref")
	s.base, _, _ = unstructured.NestedString(u.Object, "status", "urls", "base")
	return s
}

// waitServing waits until the cluster serves digest, and returns when it
// was first seen doing so.
func (c *cluster) waitServing(t *testing.T, digest string) (served, time.Time) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		s := c.served(t)
		if s.serving == "True/Available" && strings.HasSuffix(s.ref, "@"+digest) {
			return s, time.Now()
		}
		if time.Now().After(deadline) {
			for _, a := range c.agents {
				t.Logf("agent log:\n%s", tail(a.Log(), 4000))
			}
			t.Fatalf("cluster %s does not serve %s within %s: %+v", c.kube.URL, digest, waitFor, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
