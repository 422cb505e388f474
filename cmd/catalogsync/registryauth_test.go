package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"

	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// privateRegistry starts a TLS registry with htpasswd (user reader,
// password good) holding the tiny catalog at acme/private:v1, and returns
// it, its CA and the digest.
func privateRegistry(t *testing.T, user, good string) (*servers.Registry, *servers.TestCA, string) {
	t.Helper()
	ca := servers.NewTestCA(t)
	reg := servers.StartRegistry(t, servers.WithTLS(ca), servers.WithHtpasswd(map[string]string{user: good}))
	h := config.HostNewName(reg.Host)
	h.RegCert, h.User, h.Pass = string(ca.CertPEM), user, good
	root, _ := filepath.Abs("../..")
	digest, err := imagebuild.Push(context.Background(), regclient.New(regclient.WithConfigHost(*h)), reg.Host+"/acme/private:v1",
		imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	return reg, ca, digest
}

// registryCreds is a config file's registries entry for reg.
func registryCreds(reg *servers.Registry, ca *servers.TestCA, user, pass string) string {
	return fmt.Sprintf("registries:\n- name: %s\n  caFile: %s\n  username: %s\n  password: %s\n", reg.Host, ca.CertFile, user, pass)
}

// authFailed checks the REST view of a sync the registry refused: its
// own reason, a message that says where to look and no password, and the
// next attempt planned at the backoff's cap (a blip's first is ~1 s).
func authFailed(t *testing.T, v catalogState, body, host string, secrets ...string) {
	t.Helper()
	e := v.LastSync.Error
	if e == nil || e.Reason != "AuthenticationFailed" || !e.Retryable {
		t.Fatalf("REST error of a refused login: %s", body)
	}
	if !strings.Contains(e.Message, "credentials configured for "+host) {
		t.Errorf("message does not say where to look: %q", e.Message)
	}
	capped := backoff.Default.Max
	if d := v.NextRetry.Sub(v.LastSync.Finished); d < capped*8/10 || d > capped*12/10+time.Second {
		t.Errorf("next retry %v after the failure, want the cap %v: %s", d, capped, body)
	}
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("REST shows a password: %s", body)
		}
	}
}

// A registry that refuses the configured credentials (401 from a real
// registry with htpasswd): REST has the reason AuthenticationFailed, the
// next attempt is planned at the backoff's cap rather than a second
// later, nothing says the password, and a sync after the registry accepts
// the credentials runs at once, succeeds and clears the failures.
func TestServeRegistryAuthFailure(t *testing.T) {
	const user, good, wrong = "reader", "right-Pw-5e1f0c", "wrong-Pw-93ab7d"
	reg, ca, digest := privateRegistry(t, user, good)
	cfg := writeServeConfig(t, fmt.Sprintf("catalogs:\n- name: private\n  image: %s/acme/private:v1\n", reg.Host)+registryCreds(reg, ca, user, wrong))
	s := startServe(t, "--config", cfg, "--store", t.TempDir(), "--api-open")

	v, body := settledCatalog(t, s.addr, "private", "Failed")
	authFailed(t, v, body, reg.Host, good, wrong)
	if logs := s.logs.String(); strings.Contains(logs, good) || strings.Contains(logs, wrong) {
		t.Error("the log shows a password")
	}

	reg.Stop()
	reg.SetUsers(map[string]string{user: wrong})
	reg.Start()
	if code, b := do(t, "POST", "http://"+s.addr+"/api/v1/catalogs/private/sync", "", nil); code != 202 {
		t.Fatalf("sync: %d %s", code, b)
	}
	v, body = settledCatalog(t, s.addr, "private", "Succeeded")
	if v.ConsecutiveFailures != 0 || !v.NextRetry.IsZero() || v.Published == nil || v.Published.Digest != digest {
		t.Fatalf("after a success: %s", body)
	}
}

// The same refusal for a ClusterCatalog on a real kube-apiserver: its
// Progressing condition stays catalogd's True/Retrying with
// AuthenticationFailed leading the message, and the status shows no
// password; REST says the same as in config mode.
func TestServeRegistryAuthFailureStatus(t *testing.T) {
	const user, good, wrong = "reader", "right-Pw-71c2aa", "wrong-Pw-0d4e9b"
	reg, ca, _ := privateRegistry(t, user, good)
	kube, k := clusterCatalogKube(t, "private")
	cfg := writeServeConfig(t, registryCreds(reg, ca, user, wrong))
	s := startServe(t, "--config", cfg, "--store", t.TempDir(), "--clustercatalogs", "--kubeconfig", kube.Kubeconfig, "--base-url", "http://example.test")
	k(fmt.Sprintf("apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata:\n  name: private\nspec:\n  source:\n    type: Image\n    image:\n      ref: %s/acme/private:v1\n", reg.Host), "apply", "-f", "-")

	v, body := settledCatalog(t, s.addr, "private", "Failed")
	authFailed(t, v, body, reg.Host, good, wrong)
	cond := func(f string) string {
		return k("", "get", "clustercatalog", "private", "-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].`+f+`}`)
	}
	eventually(t, "Progressing Retrying", 30*time.Second, func() bool { return cond("reason") == "Retrying" })
	if msg := cond("message"); !strings.HasPrefix(msg, "AuthenticationFailed while resolving: ") || !strings.Contains(msg, "credentials configured for "+reg.Host) {
		t.Errorf("Progressing message %q", msg)
	}
	if st := k("", "get", "clustercatalog", "private", "-o", "json"); strings.Contains(st, good) || strings.Contains(st, wrong) {
		t.Error("the status shows a password")
	}
}
