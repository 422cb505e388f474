package kubeclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/catalogsync/catalogsync/test/servers"
)

// configYAML is a kubeconfig file's YAML; clusters, users and contexts
// are lists of flow mappings.
func configYAML(current string, clusters, users, contexts []string) string {
	s := "apiVersion: v1\nkind: Config\n"
	if current != "" {
		s += "current-context: " + current + "\n"
	}
	for _, l := range []struct {
		key   string
		items []string
	}{{"clusters", clusters}, {"users", users}, {"contexts", contexts}} {
		if len(l.items) > 0 {
			s += l.key + ": [" + strings.Join(l.items, ", ") + "]\n"
		}
	}
	return s
}

// whoami asks the apiserver who cfg authenticates as (SelfSubjectReview).
func whoami(cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second // a bound, not an assertion
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	resp, err := c.Post(cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	var r struct {
		Status struct {
			UserInfo struct{ Username string } `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

func wantUser(t *testing.T, kubeconfig, user string) {
	t.Helper()
	cfg, err := Config(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := whoami(cfg)
	if err != nil || got != user {
		t.Fatalf("authenticated as %q (%v), want %q", got, err, user)
	}
}

// Kubeconfigs as people write them reach a real kube-apiserver as the
// user they name.
func TestConfigAgainstKubeAPIServer(t *testing.T) {
	k := servers.StartKube(t)
	cluster := fmt.Sprintf(`{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}`, k.URL)
	admin := fmt.Sprintf(`{name: admin, user: {token: %q}}`, k.Token)

	t.Run("a list of files is merged", func(t *testing.T) {
		dir := t.TempDir()
		// The context and cluster in one file, the credentials in another.
		a := writeFile(t, dir, "a", configYAML("test", []string{cluster}, nil, []string{`{name: test, context: {cluster: test, user: admin}}`}))
		b := writeFile(t, dir, "b", configYAML("", nil, []string{admin}, nil))
		wantUser(t, a+string(filepath.ListSeparator)+b, "admin")
	})

	t.Run("KUBECONFIG's current context picks the cluster and user", func(t *testing.T) {
		dir := t.TempDir()
		contexts := []string{
			`{name: broken, context: {cluster: nowhere, user: admin}}`,
			`{name: admin, context: {cluster: test, user: admin}}`,
			`{name: viewer, context: {cluster: test, user: viewer}}`,
		}
		nowhere := `{name: nowhere, cluster: {server: "https://127.0.0.1:1"}}`
		viewer := fmt.Sprintf(`{name: viewer, user: {token: %q, as: viewer}}`, k.Token)
		// The first file to set current-context wins.
		first := filepath.Join(dir, "first")
		second := writeFile(t, dir, "second", configYAML("broken", []string{cluster, nowhere}, []string{admin, viewer}, contexts))
		t.Setenv("KUBECONFIG", first+string(filepath.ListSeparator)+second)
		writeFile(t, dir, "first", configYAML("admin", nil, nil, nil))
		wantUser(t, "", "admin")
		writeFile(t, dir, "first", configYAML("viewer", nil, nil, nil))
		wantUser(t, "", "viewer")
	})

	t.Run("an exec plugin beside the kubeconfig gives the token", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "token.sh", "#!/bin/sh\nprintf '%s' '"+
			`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"`+k.Token+`"}}'`+"\n")
		exec := `{name: plugin, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./token.sh, interactiveMode: Never}}}`
		kc := writeFile(t, dir, "config", configYAML("test", []string{cluster}, []string{exec}, []string{`{name: test, context: {cluster: test, user: plugin}}`}))
		wantUser(t, kc, "admin")
	})

	t.Run("impersonation is honoured", func(t *testing.T) {
		dir := t.TempDir()
		as := fmt.Sprintf(`{name: admin, user: {token: %q, as: someone}}`, k.Token)
		kc := writeFile(t, dir, "config", configYAML("test", []string{cluster}, []string{as}, []string{`{name: test, context: {cluster: test, user: admin}}`}))
		wantUser(t, kc, "someone")
	})

	t.Run("proxy-url is used", func(t *testing.T) {
		p := &connectProxy{}
		srv := httptest.NewServer(p)
		t.Cleanup(func() { srv.Close(); p.closeAll() })
		dir := t.TempDir()
		proxied := fmt.Sprintf(`{name: test, cluster: {server: %q, insecure-skip-tls-verify: true, proxy-url: %q}}`, k.URL, srv.URL)
		kc := writeFile(t, dir, "config", configYAML("test", []string{proxied}, []string{admin}, []string{`{name: test, context: {cluster: test, user: admin}}`}))
		wantUser(t, kc, "admin")
		if p.tunnels() == 0 {
			t.Fatal("the apiserver was reached without the proxy")
		}
	})
}

// connectProxy is an HTTP CONNECT proxy that counts its tunnels.
type connectProxy struct {
	mu    sync.Mutex
	n     int
	conns []net.Conn
}

func (p *connectProxy) tunnels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *connectProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	up, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.mu.Lock()
	p.n++
	p.conns = append(p.conns, conn, up)
	p.mu.Unlock()
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	go func() { _, _ = io.Copy(up, buf) }()
	_, _ = io.Copy(conn, up)
}
