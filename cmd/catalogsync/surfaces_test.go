package main

import (
	"strings"
	"testing"
)

// TestServeLogsSurfaces: the start-up log says what each surface needs,
// warns when the REST API refuses every POST (and how to open it), and
// warns loudly when no catalog is configured, naming the catalogs the
// store holds that serve then does not serve.
func TestServeLogsSurfaces(t *testing.T) {
	t.Run("closed API, no catalog, populated store", func(t *testing.T) {
		store := t.TempDir()
		if code, _, stderr := runCLI(t, "sync", "--store", store, "--name", "sample", "--image", sample(t)); code != 0 {
			t.Fatalf("sync: %d %s", code, stderr)
		}
		t.Setenv(envAPIToken, "")
		s := startServe(t, "--store", store)
		logs := s.logs.String()
		for _, want := range []string{
			`level=INFO msg=surfaces api.read=open api.post=closed events=off webhooks=0 ui=open metrics=open`,
			`level=WARN msg="the REST API refuses every POST (401)`, envAPIToken, "--api-open",
			`level=WARN msg="NO CATALOG IS CONFIGURED`, "--config", "--clustercatalogs",
			`stored=[sample]`,
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("no %q in the log:\n%s", want, logs)
			}
		}
	})
	t.Run("token set, a catalog, events with a token", func(t *testing.T) {
		t.Setenv(envAPIToken, "s3cret-token")
		cfg := writeServeConfig(t, "catalogs: [{name: tiny, image: \"127.0.0.1:1/tiny:v1\"}]\nevents: {token: ev-s3cret}\n")
		s := startServe(t, "--config", cfg, "--store", t.TempDir())
		logs := s.logs.String()
		if want := `msg=surfaces api.read=open api.post=token events=token webhooks=0`; !strings.Contains(logs, want) {
			t.Errorf("no %q in the log:\n%s", want, logs)
		}
		for _, not := range []string{"refuses every POST", "NO CATALOG", "s3cret"} {
			if strings.Contains(logs, not) {
				t.Errorf("%q in the log:\n%s", not, logs)
			}
		}
	})
	t.Run("client CA, UI open", func(t *testing.T) {
		s := startMTLSServe(t, "", nil, "CATALOGSYNC_UI_OPEN=true", envAPIToken+"=s3cret-token")
		want := `msg=surfaces api.read=client-certificate api.post=token+client-certificate events=off webhooks=0 ui=open metrics=client-certificate`
		if logs := s.cs.Log(); !strings.Contains(logs, want) {
			t.Errorf("no %q in the log:\n%s", want, logs)
		}
	})
}
