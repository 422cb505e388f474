package servers_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

func TestRegistryServesAndRestarts(t *testing.T) {
	reg := servers.StartRegistry(t)
	if !strings.HasPrefix(reg.Host, "127.0.0.1:") || reg.URL != "http://"+reg.Host {
		t.Fatalf("Host %q URL %q", reg.Host, reg.URL)
	}
	resp := do(t, http.MethodGet, reg.URL+"/v2/", nil, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Fatalf("GET /v2/: %s %v", resp.Status, resp.Header)
	}

	blob := []byte("hello registry")
	dig := pushBlob(t, reg.URL, "test/repo", blob)
	blobURL := reg.URL + "/v2/test/repo/blobs/" + dig

	reg.Stop()
	if _, err := http.Get(reg.URL + "/v2/"); err == nil {
		t.Fatal("registry still answers after Stop")
	}
	reg.Start()
	// Same port, same storage.
	if resp := do(t, http.MethodHead, blobURL, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD blob after restart: %s", resp.Status)
	}
	// Deletes are enabled (a registry without them answers 405).
	if resp := do(t, http.MethodDelete, blobURL, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE blob: %s", resp.Status)
	}
	if resp := do(t, http.MethodHead, blobURL, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD deleted blob: %s", resp.Status)
	}
}

func TestRegistryNotifications(t *testing.T) {
	type delivery struct {
		contentType, auth string
		body              []byte
	}
	got := make(chan delivery, 100)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Get("Content-Type"), r.Header.Get("Authorization"), b}
	}))
	t.Cleanup(sink.Close)

	reg := servers.StartRegistry(t, servers.WithNotifications(sink.URL, map[string]string{"Authorization": "Bearer hook"}))
	dig := pushBlob(t, reg.URL, "notify/repo", []byte("event me"))
	do(t, http.MethodHead, reg.URL+"/v2/notify/repo/blobs/"+dig, nil, nil)

	// Delivery is asynchronous: wait for the push event of our blob.
	deadline := time.After(20 * time.Second)
	for {
		select {
		case d := <-got:
			if d.contentType != "application/vnd.docker.distribution.events.v2+json" || d.auth != "Bearer hook" {
				t.Fatalf("delivery with Content-Type %q Authorization %q", d.contentType, d.auth)
			}
			var env struct {
				Events []struct {
					Action string
					Target struct{ Digest, Repository string }
				}
			}
			if err := json.Unmarshal(d.body, &env); err != nil {
				t.Fatalf("event body: %v\n%s", err, d.body)
			}
			if len(env.Events) != 1 {
				t.Fatalf("want one event per POST, got %d", len(env.Events))
			}
			if e := env.Events[0]; e.Action == "push" && e.Target.Digest == dig && e.Target.Repository == "notify/repo" {
				return
			}
		case <-deadline:
			t.Fatal("no push event for the uploaded blob")
		}
	}
}

func TestMinIO(t *testing.T) {
	m := servers.StartMinIO(t)
	if resp := do(t, http.MethodGet, m.Endpoint+"/minio/health/live", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("live: %s", resp.Status)
	}
	// Unsigned requests are refused; signed ones with the root credentials work.
	if resp := do(t, http.MethodGet, m.Endpoint+"/", nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous ListBuckets: %s", resp.Status)
	}
	if resp := s3(t, m, http.MethodPut, "/catalogs"); resp.StatusCode != http.StatusOK {
		t.Fatalf("CreateBucket: %s", resp.Status)
	}
	m.Stop()
	if _, err := http.Get(m.Endpoint + "/minio/health/live"); err == nil {
		t.Fatal("minio still answers after Stop")
	}
	m.Start()
	resp := s3(t, m, http.MethodGet, "/")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("<Name>catalogs</Name>")) {
		t.Fatalf("ListBuckets after restart: %s\n%s", resp.Status, body)
	}

	// Through a Proxy, requests signed for the proxy's address verify: it
	// keeps the Host header.
	p := servers.NewProxy(t, m.Endpoint)
	if resp := s3Via(t, m, p.URL, http.MethodGet, "/"); resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("ListBuckets through the proxy: %s\n%s", resp.Status, body)
	}
	if p.Count(servers.Other) != 1 {
		t.Fatalf("proxy counts %v", p.Counts())
	}
}

func TestKube(t *testing.T) {
	k := servers.StartKube(t)
	c := k.Client()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := c.Get(k.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz: %d %s", code, body)
	}
	// The token is an admin; anonymous requests are not.
	if code, body := get("/api/v1/namespaces/default"); code != http.StatusOK {
		t.Fatalf("GET namespace with token: %d %s", code, body)
	}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := anon.Get(k.URL + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous GET namespace: %s", resp.Status)
	}

	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept"},"data":{"k":"v"}}`
	resp, err = c.Post(k.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(cm))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create configmap: %s", resp.Status)
	}

	// The kubeconfig works for kubectl.
	out, err := exec.Command(servers.Binary(t, "kubectl"), "--kubeconfig", k.Kubeconfig, "get", "configmap", "kept", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "configmap/kept" {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}

	// A Proxy in front of the HTTPS apiserver serves plain HTTP.
	p := servers.NewProxy(t, k.URL)
	resp, err = c.Get(p.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || p.Count(servers.Other) != 1 {
		t.Fatalf("readyz through the proxy: %s, counts %v", resp.Status, p.Counts())
	}

	k.Stop()
	if _, err := c.Get(k.URL + "/readyz"); err == nil {
		t.Fatal("kube-apiserver still answers after Stop")
	}
	k.Start()
	if code, body := get("/api/v1/namespaces/default/configmaps/kept"); code != http.StatusOK {
		t.Fatalf("configmap after restart: %d %s", code, body)
	}
}

func do(t *testing.T, method, url string, body []byte, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// pushBlob uploads b (POST for a session, then one PUT) and returns its digest.
func pushBlob(t *testing.T, base, repo string, b []byte) string {
	t.Helper()
	sum := sha256.Sum256(b)
	dig := "sha256:" + hex.EncodeToString(sum[:])
	resp := do(t, http.MethodPost, base+"/v2/"+repo+"/blobs/uploads/", nil, nil)
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusAccepted || err != nil {
		t.Fatalf("blob upload session: %s %v", resp.Status, err)
	}
	q := loc.Query()
	q.Set("digest", dig)
	loc.RawQuery = q.Encode()
	resp = do(t, http.MethodPut, loc.String(), b, http.Header{"Content-Type": {"application/octet-stream"}})
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("blob upload: %s %s", resp.Status, body)
	}
	return dig
}

// s3 sends an AWS Signature V4 signed request with an empty body to MinIO,
// enough to check the credentials without an S3 client library.
func s3(t *testing.T, m *servers.MinIO, method, path string) *http.Response {
	t.Helper()
	return s3Via(t, m, m.Endpoint, method, path)
}

// s3Via signs for the host of endpoint, which may be a Proxy in front of m.
func s3Via(t *testing.T, m *servers.MinIO, endpoint, method, path string) *http.Response {
	t.Helper()
	now := time.Now().UTC()
	amzDate, day := now.Format("20060102T150405Z"), now.Format("20060102")
	emptySHA := hex.EncodeToString(sha256.New().Sum(nil))
	canonical := strings.Join([]string{
		method, path, "",
		"host:" + strings.TrimPrefix(endpoint, "http://"), "x-amz-content-sha256:" + emptySHA, "x-amz-date:" + amzDate, "",
		"host;x-amz-content-sha256;x-amz-date", emptySHA,
	}, "\n")
	scope := day + "/" + m.Region + "/s3/aws4_request"
	cr := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(cr[:])
	key := []byte("AWS4" + m.SecretKey)
	for _, part := range []string{day, m.Region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	auth := fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
		m.AccessKey, scope, hex.EncodeToString(hmacSHA256(key, toSign)))
	return do(t, method, endpoint+path, nil, http.Header{
		"Authorization":        {auth},
		"X-Amz-Date":           {amzDate},
		"X-Amz-Content-Sha256": {emptySHA},
	})
}

func hmacSHA256(key []byte, s string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}
