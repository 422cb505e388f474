package source_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"

	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

func pushTLS(t *testing.T, reg *servers.Registry, ca *servers.TestCA) string {
	t.Helper()
	h := config.HostNewName(reg.Host)
	h.RegCert = string(ca.CertPEM)
	_, file, _, _ := runtime.Caller(0)
	img := imagebuild.FromDir(filepath.Join(filepath.Dir(file), "../../testdata/fbc/tiny/configs"), "/configs")
	d, err := imagebuild.Push(context.Background(), regclient.New(regclient.WithConfigHost(*h)), reg.Host+"/acme/catalog:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCAReload resolves from a registry with a certificate of a test CA:
// refused while the configured bundle holds another CA, accepted from the
// next connection once the bundle is rewritten, with the same Source; a
// per-host bundle and an insecure host work too.
func TestCAReload(t *testing.T) {
	ca := servers.NewTestCA(t)
	other := servers.NewTestCA(t)
	reg := servers.StartRegistry(t, servers.WithTLS(ca))
	digest := pushTLS(t, reg, ca)
	bundle := filepath.Join(t.TempDir(), "ca-bundle.pem")
	if err := os.WriteFile(bundle, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	newSource := func(opts ...source.Option) *source.Source {
		src, err := source.New(append([]source.Option{source.WithDockerConfig(false), source.WithRetry(0, time.Millisecond, time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return src
	}
	image := reg.Host + "/acme/catalog:v1"
	src := newSource(source.WithCAFile(bundle))
	if _, err := src.Resolve(context.Background(), image); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("with another CA: %v", err)
	}
	// Rewritten (another size): read again at the next handshake.
	if err := os.WriteFile(bundle, append(append([]byte{}, other.CertPEM...), ca.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := src.Resolve(context.Background(), image); err != nil || r.Digest != digest {
		t.Fatalf("after the bundle changed: %+v %v", r, err)
	}
	// Per host.
	src = newSource(source.WithHosts(source.Host{Name: reg.Host, CAFile: ca.CertFile}))
	if r, err := src.Resolve(context.Background(), image); err != nil || r.Digest != digest {
		t.Fatalf("per-host CA: %+v %v", r, err)
	}
	// Insecure host: no verification at all.
	src = newSource(source.WithHosts(source.Host{Name: reg.Host, InsecureSkipVerify: true}))
	if r, err := src.Resolve(context.Background(), image); err != nil || r.Digest != digest {
		t.Fatalf("insecure host: %+v %v", r, err)
	}
	// A bundle that does not exist or holds no certificate fails at start.
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing.pem"), reg.ConfigPath} {
		if _, err := source.New(source.WithCAFile(bad)); err == nil {
			t.Errorf("bundle %s accepted", bad)
		}
	}
}
