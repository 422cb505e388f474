package kubeclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const head = "apiVersion: v1\nkind: Config\n"

// writeFile writes s to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// A kubeconfig's current context is read as kubectl reads it: relative
// file names beside the file, exec plugins never interactive, proxy-url
// and impersonation kept.
func TestConfigReadsCurrentContextAsKubectl(t *testing.T) {
	dir, abs := t.TempDir(), t.TempDir()
	// clientcmd reads the files a kubeconfig names when it loads it.
	if err := os.Mkdir(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "ca.crt", "")
	writeFile(t, dir, "keys/u.key", "")
	cert := writeFile(t, abs, "u.crt", "")
	good := writeFile(t, dir, "good", head+`current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}, {name: other, context: {cluster: none}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt, tls-server-name: api, proxy-url: "http://proxy.test:3128"}}]
users: [{name: u, user: {client-certificate: `+cert+`, client-key: keys/u.key, as: someone, as-groups: [g],
  exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token, interactiveMode: IfAvailable}}}]
`)
	cfg, err := Config(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.CAFile != filepath.Join(dir, "ca.crt") || cfg.CertFile != cert ||
		cfg.KeyFile != filepath.Join(dir, "keys/u.key") || cfg.ServerName != "api" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.QPS != defaultQPS || cfg.Burst != defaultBurst || cfg.UserAgent != "catalogsync" {
		t.Errorf("QPS %v burst %d agent %q", cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
	if ex := cfg.ExecProvider; ex == nil || !ex.StdinUnavailable || ex.Command != filepath.Join(dir, "get-token") {
		t.Errorf("exec %+v", ex)
	}
	if cfg.Impersonate.UserName != "someone" || len(cfg.Impersonate.Groups) != 1 {
		t.Errorf("impersonate %+v", cfg.Impersonate)
	}
	if cfg.Proxy == nil {
		t.Error("proxy-url ignored")
	}
}

// What the kubeconfig cannot honour is refused when it is read, with an
// error naming the file.
func TestConfigRefusesUnusableKubeconfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"no context":    head + "current-context: missing\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no cluster":    head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no server":     head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, cluster: {}}]\n",
		"auth-provider": head + "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: https://x}}]\nusers: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
		"not yaml":      "{",
	} {
		p := writeFile(t, dir, strings.ReplaceAll(name, " ", "-"), body)
		if _, err := Config(p); !errors.Is(err, ErrKubeconfig) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Config(filepath.Join(dir, "absent")); !errors.Is(err, ErrKubeconfig) {
		t.Errorf("absent: %v", err)
	}
	// A user the context names but nobody defines is no user: no
	// credentials.
	cfg, err := Config(writeFile(t, dir, "nouser", head+"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: gone}}]\nclusters: [{name: k, cluster: {server: https://x}}]\n"))
	if err != nil || cfg.BearerToken != "" || cfg.ExecProvider != nil {
		t.Errorf("no user: %v %+v", err, cfg)
	}
}

// Without a kubeconfig, outside a cluster and with no home kubeconfig,
// the error says where it looked.
func TestConfigWithoutKubeconfigOutsideCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	_, err := Config("")
	if err == nil || !strings.Contains(err.Error(), "not in a cluster") || !strings.Contains(err.Error(), "KUBECONFIG") {
		t.Errorf("err %v", err)
	}
}
