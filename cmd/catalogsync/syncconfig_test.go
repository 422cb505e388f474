package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// sync --config reads the registry, its credentials and the signature
// policy from the file serve reads: under a key policy, an unsigned image
// on a private TLS registry is refused and nothing is published; once
// signed, the same command publishes it and says what verified it. The
// password shows nowhere.
func TestSyncConfigAppliesSignaturePolicy(t *testing.T) {
	const user, pass = "reader", "sync-Pw-4c1d9e"
	reg, ca, digest := privateRegistry(t, user, pass)
	key, pub := cosignKey(t)
	store := t.TempDir()
	cfg := writeServeConfig(t, fmt.Sprintf("storage: {dir: %s}\nsignaturePolicy:\n- prefix: %s/acme\n  keys: [%s]\ncatalogs:\n- name: private\n  image: %s/acme/private:v1\n",
		store, reg.Host, pub, reg.Host)+registryCreds(reg, ca, user, pass))
	args := []string{"sync", "--config", cfg, "--name", "private", "--no-docker-config"}

	code, out, stderr := runCLI(t, args...)
	if code != 1 || !strings.Contains(stderr, "not signed") {
		t.Fatalf("unsigned image: exit %d, want 1 saying it is not signed\n%s%s", code, out, stderr)
	}
	st, err := fs.New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if p, _, err := catalog.Current(context.Background(), st, "private"); err == nil {
		t.Fatalf("the unsigned image was published: %+v", p)
	}

	h := config.HostNewName(reg.Host)
	h.RegCert, h.User, h.Pass = string(ca.CertPEM), user, pass
	if err := imagebuild.CosignSign(context.Background(), regclient.New(regclient.WithConfigHost(*h)), reg.Host+"/acme/private", key, digest, digest); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "Published "+digest) || !strings.Contains(out, "verified    cosign key "+pub) {
		t.Fatalf("signed image: exit %d, want it published and verified\n%s%s", code, out, stderr)
	}
	if p, _, err := catalog.Current(context.Background(), st, "private"); err != nil || p.Digest != digest {
		t.Fatalf("published pointer %+v, %v; want %s", p, err, digest)
	}
	if strings.Contains(out+stderr, pass) {
		t.Error("the output shows the password")
	}
}

// sync --config --name picks the file's catalog; a name the file does
// not list says which it does.
func TestSyncConfigNamesTheFilesCatalogs(t *testing.T) {
	store := t.TempDir()
	cfg := writeServeConfig(t, fmt.Sprintf("storage: {dir: %s}\ncatalogs:\n- name: sample\n  image: %s\n", store, sample(t)))
	code, out, stderr := runCLI(t, "sync", "--config", cfg, "--name", "other")
	if code != 2 || !strings.Contains(stderr, `--name "other" is not a catalog of `+cfg+` (it lists sample)`) {
		t.Fatalf("unlisted name: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "sync", "--config", cfg, "--name", "sample")
	if code != 0 || !strings.Contains(out, `catalog "sample": Published sha256:`) || !strings.Contains(out, "stored under "+store) {
		t.Fatalf("the file's catalog into the file's store: exit %d\n%s%s", code, out, stderr)
	}
}

// sync --pull-secret and poll --pull-secret read the registry's
// credentials from a kubernetes.io/dockerconfigjson Secret on a real
// kube-apiserver, as serve does: without it the private registry refuses
// the sync, with it the catalog is published.
func TestSyncPullSecret(t *testing.T) {
	const user, pass = "reader", "pull-Pw-7f20ab"
	reg, ca, digest := privateRegistry(t, user, pass)
	kube := servers.SharedKube(t)
	k := kubectlOn(t, kube)
	k("", "create", "secret", "docker-registry", "regcred", "--docker-server", reg.Host, "--docker-username", user, "--docker-password", pass)
	t.Cleanup(func() { k("", "delete", "secret", "regcred") })
	for _, tc := range []struct {
		cmd       []string
		published string
	}{
		{[]string{"sync", "--name", "private"}, "Published " + digest},
		{[]string{"poll"}, "private: Published " + digest},
	} {
		t.Run(tc.cmd[0], func(t *testing.T) {
			cfg := writeServeConfig(t, fmt.Sprintf("storage: {dir: %s}\ncatalogs:\n- name: private\n  image: %s/acme/private:v1\nregistries:\n- name: %s\n  caFile: %s\n",
				t.TempDir(), reg.Host, reg.Host, ca.CertFile))
			args := append(tc.cmd, "--config", cfg, "--no-docker-config", "--kubeconfig", kube.Kubeconfig)
			code, out, stderr := runCLI(t, args...)
			if code != 1 || !strings.Contains(out+stderr, "AuthenticationFailed") {
				t.Fatalf("without the pull secret: exit %d, want 1 with AuthenticationFailed\n%s%s", code, out, stderr)
			}
			code, out, stderr = runCLI(t, append(args, "--pull-secret", "default/regcred")...)
			if code != 0 || !strings.Contains(out, tc.published) {
				t.Fatalf("with the pull secret: exit %d, want %q\n%s%s", code, tc.published, out, stderr)
			}
			if strings.Contains(out+stderr, pass) {
				t.Error("the output shows the password")
			}
		})
	}
}
