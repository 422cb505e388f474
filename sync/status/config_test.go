package status

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RESTConfig reads a kubeconfig's current context as kubectl does:
// relative file names beside the file, exec plugins never interactive,
// and refuses what it cannot honour.
func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "apiVersion: v1\nkind: Config\n"
	good := write("good", head+`current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}, {name: other, context: {cluster: none}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt, tls-server-name: api}}]
users: [{name: u, user: {client-certificate: /abs/u.crt, client-key: keys/u.key, tokenFile: tok, exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}}}]
`)
	cfg, err := RESTConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.CAFile != filepath.Join(dir, "ca.crt") || cfg.CertFile != "/abs/u.crt" ||
		cfg.KeyFile != filepath.Join(dir, "keys/u.key") || cfg.BearerTokenFile != filepath.Join(dir, "tok") || cfg.ServerName != "api" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.QPS != defaultQPS || cfg.Burst != defaultBurst || cfg.UserAgent != "catalogsync" {
		t.Errorf("QPS %v burst %d agent %q", cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
	if ex := cfg.ExecProvider; ex == nil || !ex.StdinUnavailable || ex.InteractiveMode != "Never" || ex.Command != "get-token" {
		t.Errorf("exec %+v", ex)
	}
	for name, body := range map[string]string{
		"no context":    head + "current-context: missing\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no cluster":    head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no server":     head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, cluster: {}}]\n",
		"auth-provider": head + "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: https://x}}]\nusers: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
		"not yaml":      "{",
	} {
		if _, err := RESTConfig(write(name, body)); !errors.Is(err, ErrKubeconfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := RESTConfig(filepath.Join(dir, "absent")); !errors.Is(err, ErrKubeconfig) {
		t.Errorf("absent: %v", err)
	}
	// No kubeconfig means the pod's service account, which a test is not.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := RESTConfig(""); err == nil || !strings.Contains(err.Error(), "in-cluster") {
		t.Errorf("in-cluster outside a cluster: %v", err)
	}
	// A user the context does not name is no user: no credentials.
	cfg, err = RESTConfig(write("nouser", head+"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: gone}}]\nclusters: [{name: k, cluster: {server: https://x}}]\n"))
	if err != nil || cfg.BearerToken != "" || cfg.ExecProvider != nil {
		t.Errorf("no user: %v %+v", err, cfg)
	}
}
