package servers

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// KubeAPIServer is a kube-apiserver on 127.0.0.1 backed by its own etcd. It
// serves HTTPS with a self-signed certificate; Token authenticates as an
// admin in group system:masters.
type KubeAPIServer struct {
	URL        string // https://127.0.0.1:port
	Kubeconfig string // path of a kubeconfig using Token, skipping TLS verification
	Token      string
	EtcdURL    string // http://127.0.0.1:port
	LogPath    string // kube-apiserver's log; etcd's is beside it

	t      testing.TB
	mu     sync.Mutex
	apiSrv *process
}

const (
	kubeReadyTimeout = 60 * time.Second
	etcdReadyTimeout = 30 * time.Second
)

// StartKube starts etcd (no fsync, data in a temp folder) and kube-apiserver
// on free ports, waits until /readyz answers 200 and writes a kubeconfig.
// t.Cleanup stops both.
func StartKube(t testing.TB) *KubeAPIServer {
	t.Helper()
	etcdBin := Binary(t, "etcd")
	apiBin := Binary(t, "kube-apiserver")
	dir := t.TempDir()
	k := &KubeAPIServer{
		t:          t,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		LogPath:    filepath.Join(dir, "kube-apiserver.log"),
	}

	etcd, err := launch(2, func(ports []int) *process {
		client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		k.EtcdURL = client
		return &process{
			name: "etcd",
			path: etcdBin,
			args: []string{
				"--name", "default",
				"--data-dir", filepath.Join(dir, "etcd"),
				"--listen-client-urls", client,
				"--advertise-client-urls", client,
				"--listen-peer-urls", peer,
				"--initial-advertise-peer-urls", peer,
				"--initial-cluster", "default=" + peer,
				"--unsafe-no-fsync",
			},
			logPath:   filepath.Join(dir, "etcd.log"),
			boundLine: `"address":"` + strings.TrimPrefix(client, "http://") + `"`,
		}
	}, etcdReadyTimeout, func(ctx context.Context) error {
		return HTTPReady(plainClient, k.EtcdURL+"/health", nil)(ctx)
	})
	if err != nil {
		t.Fatalf("servers: starting etcd: %v", err)
	}
	t.Cleanup(func() { etcd.cleanup(t) }) // registered first, so it runs after the apiserver's

	k.Token = randomHex(t, 16)
	tokens := filepath.Join(dir, "tokens.csv")
	// token,user,uid,"groups"
	writeFile(t, tokens, fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", k.Token))
	keyPath, pubPath := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	writeServiceAccountKey(t, keyPath, pubPath)

	apiSrv, err := launch(1, func(ports []int) *process {
		k.URL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
		return &process{
			name: "kube-apiserver",
			path: apiBin,
			// The flag set from docs/test-servers.md; --advertise-address is
			// left out on purpose (it makes 1.37 exit at once on 127.0.0.1).
			args: []string{
				"--etcd-servers", k.EtcdURL,
				"--cert-dir", filepath.Join(dir, "certs"),
				"--secure-port", strconv.Itoa(ports[0]),
				"--bind-address", "127.0.0.1",
				"--service-cluster-ip-range", "10.0.0.0/24",
				"--authorization-mode=RBAC",
				"--token-auth-file", tokens,
				"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file", pubPath,
				"--service-account-signing-key-file", keyPath,
				"--disable-admission-plugins=ServiceAccount",
			},
			logPath:   k.LogPath,
			boundLine: "Serving securely on " + strings.TrimPrefix(k.URL, "https://"),
		}
	}, kubeReadyTimeout, k.ready)
	if err != nil {
		t.Fatalf("servers: starting kube-apiserver: %v", err)
	}
	k.apiSrv = apiSrv
	t.Cleanup(func() { apiSrv.cleanup(t) })

	writeKubeconfig(t, k)
	return k
}

// kubeClient skips verification: the apiserver's certificate is self-signed
// and generated at its first start.
var kubeClient = &http.Client{
	Timeout: 5 * time.Second,
	Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	},
}

func (k *KubeAPIServer) ready(ctx context.Context) error {
	return HTTPReady(kubeClient, k.URL+"/readyz", http.Header{"Authorization": {"Bearer " + k.Token}})(ctx)
}

// Client returns an HTTP client for URL: it skips TLS verification and sends
// Token on every request.
func (k *KubeAPIServer) Client() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: bearer{token: k.Token, next: &http.Transport{
			Proxy:           nil,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}},
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Stop stops kube-apiserver only; etcd keeps the cluster's state. Call it
// from the test goroutine.
func (k *KubeAPIServer) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.apiSrv.stop()
}

// Start restarts kube-apiserver on the same port and waits for /readyz.
func (k *KubeAPIServer) Start() {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.apiSrv.restart(kubeReadyTimeout, k.ready); err != nil {
		k.t.Fatalf("servers: restarting kube-apiserver: %v", err)
	}
}

func writeKubeconfig(t testing.TB, k *KubeAPIServer) {
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{
			"name":    "test",
			"cluster": map[string]any{"server": k.URL, "insecure-skip-tls-verify": true},
		}},
		"users": []any{map[string]any{
			"name": "admin",
			"user": map[string]any{"token": k.Token},
		}},
		"contexts": []any{map[string]any{
			"name":    "test",
			"context": map[string]any{"cluster": "test", "user": "admin"},
		}},
		"current-context": "test",
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("servers: kubeconfig: %v", err)
	}
	if err := os.WriteFile(k.Kubeconfig, b, 0o600); err != nil {
		t.Fatalf("servers: kubeconfig: %v", err)
	}
}

// writeServiceAccountKey writes the RSA key kube-apiserver signs service
// account tokens with, and its public half that verifies them.
func writeServiceAccountKey(t testing.TB, keyPath, pubPath string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("servers: service account key: %v", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatalf("servers: service account key: %v", err)
	}
	writeFile(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(t, pubPath, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

func writeFile(t testing.TB, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("servers: %v", err)
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("servers: %v", err)
	}
	return hex.EncodeToString(b)
}
