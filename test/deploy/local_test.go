package deploy_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/test/servers"
)

// composeFile is the part of deploy/local/compose.yaml the test reads.
type composeFile struct {
	Services map[string]struct {
		Environment map[string]string `json:"environment"`
	} `json:"services"`
	Configs map[string]struct {
		Content string `json:"content"`
	} `json:"configs"`
}

// registryNotifications is the registry config's notification endpoint.
type registryNotifications struct {
	Notifications struct {
		Endpoints []struct {
			URL     string              `json:"url"`
			Headers map[string][]string `json:"headers"`
		} `json:"endpoints"`
	} `json:"notifications"`
}

// TestLocalStackPushTriggersItsCatalog: the push deploy/local/README.md
// documents (from the host, as localhost:5000) reaches catalogsync as the
// compose registry notifies it, and serve, running with the compose
// file's config and secret as they are, triggers the catalog that config
// lists (named registry:5000 inside the compose network).
func TestLocalStackPushTriggersItsCatalog(t *testing.T) {
	dir := filepath.Join(deployDir(t), "local")
	b, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatal(err)
	}
	var reg registryNotifications
	if err := yaml.Unmarshal([]byte(cf.Configs["registry-config"].Content), &reg); err != nil || len(reg.Notifications.Endpoints) != 1 {
		t.Fatalf("compose registry config: %v %+v", err, reg)
	}
	ep := reg.Notifications.Endpoints[0]
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	m := regexp.MustCompile(`docker push ([^\s/]+)/(\S+):(\S+)`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("deploy/local/README.md documents no docker push")
	}
	host, repo, tag := string(m[1]), string(m[2]), string(m[3])

	cfg := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(cfg, []byte(cf.Configs["catalogsync-config"].Content), 0o600); err != nil {
		t.Fatal(err)
	}
	// The compose service's env, with the store in a folder instead of MinIO.
	var env []string
	for k, v := range cf.Services["catalogsync"].Environment {
		if !strings.HasPrefix(k, "CATALOGSYNC_S3_") && !strings.HasPrefix(k, "AWS_") && !strings.Contains(v, "${") {
			env = append(env, k+"="+v)
		}
	}
	cs := servers.StartCatalogsync(t, []string{"--config", cfg, "--store", t.TempDir()}, env...)

	// What Distribution sends for that push: the host the client used.
	body, _ := json.Marshal(map[string]any{"events": []any{map[string]any{
		"id": "local-push-1", "action": "push", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"target": map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "repository": repo, "tag": tag,
			"digest": "sha256:65dc7b36d377971c4e9a6ea6d1c7ac4cbd809e43585adeef7f165b351b3eeb14", "size": 1103,
			"url": "http://" + host + "/v2/" + repo + "/manifests/" + tag,
		},
		"request": map[string]any{"host": host, "method": "PUT", "useragent": "docker/27"},
	}}})
	path := ep.URL[strings.Index(ep.URL[len("http://"):], "/")+len("http://"):]
	req, _ := http.NewRequest(http.MethodPost, cs.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v2+json")
	for k, vs := range ep.Headers {
		req.Header.Set(k, vs[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s\n%s", path, resp.Status, cs.Log())
	}
	resp, err = http.Get(cs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `catalogsync_webhook_events_total{outcome="triggered",source="distribution"} 1`
	if !strings.Contains(string(metrics), want) {
		var got []string
		for _, l := range strings.Split(string(metrics), "\n") {
			if strings.HasPrefix(l, "catalogsync_webhook_events_total") {
				got = append(got, l)
			}
		}
		t.Fatalf("the push of %s/%s:%s did not trigger the catalog; webhook outcomes: %v\nlog:\n%s", host, repo, tag, got, cs.Log())
	}
}
