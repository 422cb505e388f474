package servers

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// MinIO is a single-node MinIO server on 127.0.0.1. It starts with no
// buckets: creating them is left to the S3 client under test.
type MinIO struct {
	Endpoint  string // http://127.0.0.1:port, the S3 API
	Host      string // 127.0.0.1:port
	AccessKey string
	SecretKey string
	Region    string
	DataDir   string // kept across Stop and Start
	LogPath   string

	t    testing.TB
	mu   sync.Mutex
	proc *process
}

const minioReadyTimeout = 60 * time.Second

// MinIOOption changes how MinIO starts.
type MinIOOption func(*[]string)

// WithWebhookTarget configures a webhook notification target named id
// (MINIO_NOTIFY_WEBHOOK_*_<ID>): MinIO POSTs bucket events to endpoint
// with token as its auth_token ("" for none). A bucket sends to it once
// its notification configuration names WebhookARN(id).
func WithWebhookTarget(id, endpoint, token string) MinIOOption {
	return func(env *[]string) {
		*env = append(*env,
			"MINIO_NOTIFY_WEBHOOK_ENABLE_"+id+"=on",
			"MINIO_NOTIFY_WEBHOOK_ENDPOINT_"+id+"="+endpoint)
		if token != "" {
			*env = append(*env, "MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_"+id+"="+token)
		}
	}
}

// WebhookARN is the ARN of the webhook target id, as a bucket
// notification configuration names it (MinIO's region is unset).
func WebhookARN(id string) string { return "arn:minio:sqs::" + id + ":webhook" }

// StartMinIO starts MinIO on free ports (S3 API and console, the console
// pinned so MinIO does not pick a random port), with data, certs and log in
// t.TempDir(), and waits until it serves S3 requests. t.Cleanup stops it.
func StartMinIO(t testing.TB, opts ...MinIOOption) *MinIO {
	t.Helper()
	var extraEnv []string
	for _, o := range opts {
		o(&extraEnv)
	}
	bin := Binary(t, "minio")
	dir := t.TempDir()
	m := &MinIO{
		t:         t,
		AccessKey: "catalogsync",
		SecretKey: "catalogsync-secret-key",
		Region:    "us-east-1", // MinIO's default region
		DataDir:   filepath.Join(dir, "data"),
		LogPath:   filepath.Join(dir, "minio.log"),
	}
	p, err := launch(2, func(ports []int) *process {
		m.Host = "127.0.0.1:" + strconv.Itoa(ports[0])
		m.Endpoint = "http://" + m.Host
		return &process{
			name: "minio",
			path: bin,
			args: []string{
				"server", m.DataDir,
				"--address", m.Host,
				"--console-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
				// Without it MinIO creates ~/.minio/certs.
				"--certs-dir", filepath.Join(dir, "certs"),
			},
			env: append([]string{
				"MINIO_ROOT_USER=" + m.AccessKey,
				"MINIO_ROOT_PASSWORD=" + m.SecretKey,
				"MINIO_BROWSER=off",
				"MINIO_UPDATE=off",
			}, extraEnv...),
			logPath:   m.LogPath,
			boundLine: "API: " + m.Endpoint,
		}
	}, minioReadyTimeout, m.ready)
	if err != nil {
		t.Fatalf("servers: starting minio: %v", err)
	}
	m.proc = p
	t.Cleanup(func() { p.cleanup(t) })
	return m
}

// ready wants the liveness probe and then an S3 request that is not refused
// with 503: MinIO answers /minio/health/live before its object layer is up.
func (m *MinIO) ready(ctx context.Context) error {
	if err := HTTPReady(plainClient, m.Endpoint+"/minio/health/live", nil)(ctx); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Endpoint+"/", nil)
	if err != nil {
		return err
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		return fmt.Errorf("GET /: %s", resp.Status)
	}
	return nil
}

// Stop stops MinIO (SIGTERM, then SIGKILL). Call it from the test goroutine.
func (m *MinIO) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.proc.stop()
}

// Start restarts a MinIO stopped with Stop, on the same port and data.
func (m *MinIO) Start() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.proc.restart(minioReadyTimeout, m.ready); err != nil {
		m.t.Fatalf("servers: restarting minio: %v", err)
	}
}
