package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// TestOperatorControllerContract checks what operator-controller's catalog
// client relies on when catalogsync replaces catalogd (docs/olm.md): a
// synced ClusterCatalog says Serving=True, its resolvedSource.image.ref is
// a digest reference, urls.base answers /api/v1/all over HTTPS to a client
// that trusts only the serving CA (what --catalogd-cas-dir holds), and
// availabilityMode Unavailable takes it out.
func TestOperatorControllerContract(t *testing.T) {
	s := newStack(t, options{noReplica: true})
	authority := tlstest.NewCA(t, "olmv1-ca")
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c, k := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, crt, c)
	tlstest.WriteAtomic(t, key, k)
	s.args[0] = append(s.args[0], "--tls-cert-file", crt, "--tls-key-file", key, "--base-url", "https://"+s.addrs[0])
	s.startReplica(0)

	const name = "olm-contract"
	d := s.push("acme/olm-contract:v1", imagebuild.FromDir(fbcDir("tiny"), "/configs"))
	s.createCatalog(name, "acme/olm-contract:v1")
	st := s.waitServing(name, d, 60*time.Second)

	if st.cond("Serving").Reason != "Available" {
		t.Errorf("Serving reason %q, want Available", st.cond("Serving").Reason)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(s.image("acme/olm-contract")) + `@sha256:[0-9a-f]{64}$`).MatchString(st.Resolved) {
		t.Errorf("resolvedSource.image.ref %q is not a digest reference of the image", st.Resolved)
	}
	if want := "https://" + s.addrs[0] + "/catalogs/" + name; st.BaseURL != want {
		t.Fatalf("urls.base %q, want %q", st.BaseURL, want)
	}
	if got := s.kubectl("", "get", "clustercatalog", name, "-o", `jsonpath={.metadata.labels.olm\.operatorframework\.io/metadata\.name}`); got != name {
		t.Errorf("metadata.name label %q: catalog selectors by name would miss it", got)
	}

	trusting := tlstest.Client(authority.PEM, nil)
	want, err := os.ReadFile(filepath.Join(fbcDir("tiny"), "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, all := fetch(t, trusting, st.BaseURL+"/api/v1/all")
	if code != 200 || !bytes.Equal(all, want) {
		t.Fatalf("/all over HTTPS: %d, %d bytes, want the %d bytes catalogd serves", code, len(all), len(want))
	}
	resp, err := trusting.Post(st.BaseURL+"/api/v1/graphql", "application/json", strings.NewReader(`{"query":"{ olmpackages { name } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(g, []byte(`"olmpackages":[{"name":`)) {
		t.Errorf("graphql over HTTPS: %d %s", resp.StatusCode, g)
	}
	if _, err := tlstest.Client(tlstest.NewCA(t, "not-olmv1-ca").PEM, nil).Get(st.BaseURL + "/api/v1/all"); err == nil {
		t.Error("a client without the serving CA connected")
	}
	if r, err := http.Get("http://" + s.addrs[0] + "/catalogs/" + name + "/api/v1/all"); err == nil && r.StatusCode == 200 {
		r.Body.Close()
		t.Error("content served over plain HTTP on the TLS port")
	}

	s.kubectl("", "patch", "clustercatalog", name, "--type", "merge", "-p", `{"spec":{"availabilityMode":"Unavailable"}}`)
	s.waitStatus(name, "Serving False/UserSpecifiedUnavailable", 60*time.Second, func(st ccStatus) bool {
		return st.cond("Serving").Status == "False" && st.cond("Serving").Reason == "UserSpecifiedUnavailable"
	})
	eventually(t, "content 404 when Unavailable", 30*time.Second, func() bool {
		code, _ := fetch(t, trusting, st.BaseURL+"/api/v1/all")
		return code == 404
	})
}

func fetch(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
