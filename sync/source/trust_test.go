package source_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"

	"github.com/catalogsync/catalogsync/internal/regconf"
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
	newSource := func(opts ...source.Option) *source.Client {
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

// TestHostCredentials authenticates with a host's own username and
// password (the config file's registries[] entry) over TLS from a
// per-host CA.
func TestHostCredentials(t *testing.T) {
	ca := servers.NewTestCA(t)
	const user, pass = "reader", "h0st-Pw-2c9d81e4"
	reg := servers.StartRegistry(t, servers.WithTLS(ca), servers.WithHtpasswd(map[string]string{user: pass}))
	h := config.HostNewName(reg.Host)
	h.RegCert, h.User, h.Pass = string(ca.CertPEM), user, pass
	_, file, _, _ := runtime.Caller(0)
	img := imagebuild.FromDir(filepath.Join(filepath.Dir(file), "../../testdata/fbc/tiny/configs"), "/configs")
	digest, err := imagebuild.Push(context.Background(), regclient.New(regclient.WithConfigHost(*h)), reg.Host+"/acme/catalog:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	image := reg.Host + "/acme/catalog:v1"
	for _, tc := range []struct {
		name, pass string
		ok         bool
	}{{"no password", "", false}, {"wrong password", "guess", false}, {"right password", pass, true}} {
		src, err := source.New(source.WithDockerConfig(false), source.WithRetry(0, time.Millisecond, time.Millisecond),
			source.WithHosts(source.Host{Name: reg.Host, CAFile: ca.CertFile, Username: user, Password: tc.pass}))
		if err != nil {
			t.Fatal(err)
		}
		r, err := src.Resolve(context.Background(), image)
		src.Close()
		if tc.ok != (err == nil) || tc.ok && r.Digest != digest {
			t.Fatalf("%s: %+v %v", tc.name, r, err)
		}
		// A refused login is told apart from a blip, says where to look
		// and never what was sent.
		if err != nil && (!errors.Is(err, source.ErrAuth) || !source.Retryable(err) || !strings.Contains(err.Error(), "credentials configured for "+reg.Host) ||
			strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), "guess")) {
			t.Fatalf("%s: error %v", tc.name, err)
		}
	}
}

// TestInsecureHostWarned: an insecure host is said loudly at start.
func TestInsecureHostWarned(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	src, err := source.New(source.WithDockerConfig(false), source.WithLogger(log),
		source.WithHosts(source.Host{Name: "registry.example.test:5000", InsecureSkipVerify: true}, source.Host{Name: "other.example.test"}))
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "host=registry.example.test:5000") || strings.Contains(logs.String(), "other.example.test") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestRegistriesConfInsecure: a registries.conf insecure mirror is an
// insecure host, warned at start like the others.
func TestRegistriesConfInsecure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registries.conf")
	os.WriteFile(path, []byte("[[registry]]\nlocation = \"registry.example.test/acme\"\n[[registry.mirror]]\nlocation = \"mirror.example.test:5000/acme\"\ninsecure = true\n"), 0o644)
	rc, err := regconf.Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	src, err := source.New(source.WithDockerConfig(false), source.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), source.WithRegistriesConf(rc))
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if !strings.Contains(logs.String(), "host=mirror.example.test:5000") || strings.Contains(logs.String(), "host=registry.example.test") {
		t.Fatalf("logs: %s", logs.String())
	}
}
