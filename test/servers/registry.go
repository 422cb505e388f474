package servers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Registry is a CNCF Distribution registry serving plain HTTP on 127.0.0.1,
// with filesystem storage and deletes enabled.
type Registry struct {
	Host       string // 127.0.0.1:port, the registry name in image references
	URL        string // http://127.0.0.1:port
	StorageDir string // filesystem storage root, kept across Stop and Start
	ConfigPath string // the registry's YAML configuration
	LogPath    string

	t    testing.TB
	mu   sync.Mutex // serialises Stop and Start
	proc *process
	rc   registryConfig
}

// RegistryOption changes the registry's configuration.
type RegistryOption func(*registryConfig)

type registryConfig struct {
	endpoints []map[string]any
	secure    // TLS and htpasswd: registry_auth.go
}

// WithNotifications adds a notification endpoint: the registry POSTs each
// event to url as application/vnd.docker.distribution.events.v2+json, one
// event per request, asynchronously from a queue (tests must wait for
// delivery). headers are sent with every request. It can be given more than
// once for several endpoints.
func WithNotifications(url string, headers map[string]string) RegistryOption {
	return func(c *registryConfig) {
		h := map[string][]string{}
		for k, v := range headers {
			h[k] = []string{v}
		}
		c.endpoints = append(c.endpoints, map[string]any{
			"name":    fmt.Sprintf("endpoint%d", len(c.endpoints)),
			"url":     url,
			"headers": h,
			"timeout": "5s",
			// Back off only briefly after failures so fault tests stay fast.
			"threshold": 3,
			"backoff":   "250ms",
		})
	}
}

const registryReadyTimeout = 30 * time.Second

// StartRegistry starts a registry on a free port, with its configuration,
// storage and log in t.TempDir(), and waits until GET /v2/ answers 200.
// t.Cleanup stops it.
func StartRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	bin := Binary(t, "registry")
	var rc registryConfig
	for _, o := range opts {
		o(&rc)
	}
	dir := t.TempDir()
	r := &Registry{
		t:          t,
		StorageDir: filepath.Join(dir, "storage"),
		ConfigPath: filepath.Join(dir, "config.yml"),
		LogPath:    filepath.Join(dir, "registry.log"),
		rc:         rc,
	}
	p, err := launch(1, func(ports []int) *process {
		return r.process(t, bin, rc, ports[0])
	}, registryReadyTimeout, r.ready)
	if err != nil {
		t.Fatalf("servers: starting registry: %v", err)
	}
	r.proc = p
	t.Cleanup(func() { p.cleanup(t) })
	return r
}

// process sets r up to listen on port and returns the registry's process.
func (r *Registry) process(t testing.TB, bin string, rc registryConfig, port int) *process {
	r.Host = "127.0.0.1:" + strconv.Itoa(port)
	r.URL = rc.scheme() + "://" + r.Host
	if err := r.writeConfig(rc); err != nil {
		t.Fatalf("servers: registry config: %v", err)
	}
	return &process{
		name:      "registry",
		path:      bin,
		args:      []string{"serve", r.ConfigPath},
		env:       []string{"OTEL_TRACES_EXPORTER=none"}, // no OTLP exporter dialing localhost:4318
		logPath:   r.LogPath,
		boundLine: "listening on " + r.Host,
	}
}

func (r *Registry) writeConfig(rc registryConfig) error {
	cfg := map[string]any{
		"version": "0.1",
		"log": map[string]any{
			"level":     "info",
			"formatter": "text",
		},
		"storage": map[string]any{
			"filesystem":  map[string]any{"rootdirectory": r.StorageDir},
			"delete":      map[string]any{"enabled": true},
			"maintenance": map[string]any{"uploadpurging": map[string]any{"enabled": false}},
		},
		"http": map[string]any{
			"addr": r.Host,
			// A fixed secret keeps upload sessions valid across Stop and Start.
			"secret":       "catalogsync-test-registry",
			"draintimeout": "1s",
		},
	}
	if err := rc.secure.apply(cfg, filepath.Dir(r.ConfigPath), r.Host); err != nil {
		return err
	}
	if len(rc.endpoints) > 0 {
		cfg["notifications"] = map[string]any{
			"events":    map[string]any{"includereferences": true},
			"endpoints": rc.endpoints,
		}
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(r.ConfigPath, b, 0o644)
}

func (r *Registry) ready(ctx context.Context) error {
	return HTTPReady(r.rc.client(), r.URL+"/v2/", r.rc.readyHeader())(ctx)
}

// Stop stops the registry (SIGTERM, then SIGKILL); Start brings it back on
// the same port with the same storage. Call them from the test goroutine.
func (r *Registry) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proc.stop()
}

// Start restarts a registry stopped with Stop and waits until it is ready.
func (r *Registry) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.proc.restart(registryReadyTimeout, r.ready); err != nil {
		r.t.Fatalf("servers: restarting registry: %v", err)
	}
}
