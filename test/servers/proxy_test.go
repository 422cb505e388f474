package servers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

func TestRegistryClass(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"HEAD", "/v2/repo/manifests/v1", servers.ManifestHEAD},
		{"GET", "/v2/org/repo/manifests/sha256:abc", servers.ManifestGET},
		{"GET", "/v2/a/manifests/b/manifests/latest", servers.ManifestGET},
		{"PUT", "/v2/repo/manifests/v1", servers.Other},
		{"GET", "/v2/repo/blobs/sha256:abc", servers.BlobGET},
		{"HEAD", "/v2/repo/blobs/sha256:abc", servers.BlobHEAD},
		{"POST", "/v2/repo/blobs/uploads/", servers.Other},
		{"GET", "/v2/repo/blobs/uploads/123", servers.Other},
		{"GET", "/v2/", servers.Other},
		{"GET", "/v2/repo/tags/list", servers.Other},
		{"GET", "/minio/health/live", servers.Other},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if got := servers.RegistryClass(r); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// TestProxyCountsRegistryRequests pushes and pulls through a proxy in front
// of a real registry.
func TestProxyCountsRegistryRequests(t *testing.T) {
	reg := servers.StartRegistry(t)
	p := servers.NewProxy(t, reg.URL)
	ctx := context.Background()
	rc := imagebuild.NewRegClient(p.Host)
	img := imagebuild.Image{Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{{Name: "configs/a.yaml", Body: []byte("a: 1\n")}}}}}
	// The upload's Location comes back through the proxy because it keeps
	// the client's Host: every request below is seen by the proxy.
	if _, err := imagebuild.Push(ctx, rc, p.Host+"/counted:v1", img); err != nil {
		t.Fatal(err)
	}
	if p.Count(servers.Other) == 0 {
		t.Fatal("the push was not seen by the proxy")
	}
	p.ResetCounts()

	r, _ := ref.New(p.Host + "/counted:v1")
	if _, err := rc.ManifestHead(ctx, r); err != nil {
		t.Fatal(err)
	}
	m, err := rc.ManifestGet(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := m.RawBody()
	var man struct{ Layers []descriptor.Descriptor }
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	br, err := rc.BlobGet(ctx, r, man.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, br)
	br.Close()
	if resp := do(t, http.MethodGet, p.URL+"/v2/", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/ through the proxy: %s", resp.Status)
	}

	counts := p.Counts()
	for class, want := range map[string]int{servers.ManifestHEAD: 1, servers.ManifestGET: 1, servers.BlobGET: 1} {
		if counts[class] != want {
			t.Errorf("%s: %d, want %d (all: %v)", class, counts[class], want, counts)
		}
	}
	if counts[servers.Other] < 1 {
		t.Errorf("GET /v2/ not counted as other: %v", counts)
	}
	var sawBlob bool
	for _, req := range p.Requests() {
		if req.Class == servers.BlobGET {
			sawBlob = req.Method == http.MethodGet && req.Path == "/v2/counted/blobs/"+man.Layers[0].Digest.String() && req.Status == http.StatusOK
		}
	}
	if !sawBlob {
		t.Errorf("request log lacks the blob GET: %+v", p.Requests())
	}
}

// upstream serves a fixed 64 KiB body with a Content-Length.
func upstream(t *testing.T) (*httptest.Server, []byte) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, body
}

func get(t *testing.T, url string) (int, []byte, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestProxyStatusFaults(t *testing.T) {
	up, body := upstream(t)
	p := servers.NewProxy(t, up.URL)

	// The next 2 blob GETs fail; other classes are untouched meanwhile.
	p.Inject(servers.Status(http.StatusServiceUnavailable), 2, servers.BlobGET)
	blob := p.URL + "/v2/r/blobs/sha256:0"
	if code, _, _ := get(t, p.URL+"/v2/"); code != http.StatusOK {
		t.Fatalf("other request: %d", code)
	}
	for i := range 2 {
		if code, _, _ := get(t, blob); code != http.StatusServiceUnavailable {
			t.Fatalf("blob GET %d: %d, want 503", i, code)
		}
	}
	if code, b, err := get(t, blob); code != http.StatusOK || !bytes.Equal(b, body) || err != nil {
		t.Fatalf("third blob GET: %d %v", code, err)
	}

	// Until cleared.
	p.Inject(servers.Status(http.StatusBadGateway), 0)
	for range 3 {
		if code, _, _ := get(t, blob); code != http.StatusBadGateway {
			t.Fatalf("persistent fault: %d", code)
		}
	}
	p.Clear()
	if code, _, _ := get(t, blob); code != http.StatusOK {
		t.Fatalf("after Clear: %d", code)
	}

	// 429 with Retry-After, rounded up to seconds.
	p.Inject(servers.TooManyRequests(1500*time.Millisecond), 1)
	resp, err := http.Get(blob)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("429 fault: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}

	var statuses []int
	var faults int
	for _, r := range p.Requests() {
		statuses = append(statuses, r.Status)
		if r.Fault {
			faults++
		}
	}
	want := []int{200, 503, 503, 200, 502, 502, 502, 200, 429}
	if !equalInts(statuses, want) || faults != 6 {
		t.Fatalf("log statuses %v (faults %d), want %v (6)", statuses, faults, want)
	}
	if p.Count(servers.BlobGET) != 8 || p.Count(servers.Other) != 1 {
		t.Fatalf("counts %v", p.Counts())
	}
}

func TestProxyResetMidBody(t *testing.T) {
	up, body := upstream(t)
	p := servers.NewProxy(t, up.URL)

	p.Inject(servers.ResetAfter(1000), 1)
	code, got, err := get(t, p.URL+"/blob")
	if code != http.StatusOK || err == nil {
		t.Fatalf("status %d, err %v: want headers then a broken body", code, err)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("body error %v, want a reset or unexpected EOF", err)
	}
	if len(got) > 1000 || !bytes.Equal(got, body[:len(got)]) {
		t.Fatalf("got %d bytes before the reset, want at most 1000 of the body", len(got))
	}
	t.Logf("client read %d bytes, then: %v", len(got), err)

	// Reset before any response.
	p.Inject(servers.ResetAfter(-1), 1)
	if _, err := http.Get(p.URL + "/blob"); err == nil {
		t.Fatal("no error for a connection reset before the response")
	}
	// Faults are used up: the next request is whole.
	if code, b, err := get(t, p.URL+"/blob"); code != http.StatusOK || err != nil || !bytes.Equal(b, body) {
		t.Fatalf("after the faults: %d, %d bytes, %v", code, len(b), err)
	}
}

func TestProxyThrottleAndChain(t *testing.T) {
	up, body := upstream(t)
	p := servers.NewProxy(t, up.URL)

	// 64 KiB at 256 KiB/s takes about 250 ms.
	p.Inject(servers.Throttle(256<<10), 1)
	start := time.Now()
	code, b, err := get(t, p.URL+"/blob")
	took := time.Since(start)
	if code != http.StatusOK || err != nil || !bytes.Equal(b, body) {
		t.Fatalf("throttled: %d, %d bytes, %v", code, len(b), err)
	}
	if took < 200*time.Millisecond {
		t.Fatalf("64 KiB at 256 KiB/s took only %v", took)
	}
	start = time.Now()
	if _, _, err := get(t, p.URL+"/blob"); err != nil || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("unthrottled request: %v after %v", err, time.Since(start))
	}

	// Chain: wait, then answer 500.
	p.Inject(servers.Chain(servers.Delay(150*time.Millisecond), servers.Status(http.StatusInternalServerError)), 1)
	start = time.Now()
	if code, _, _ := get(t, p.URL+"/blob"); code != http.StatusInternalServerError || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("chained fault: %d after %v", code, time.Since(start))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestProxyThrottleUpload(t *testing.T) {
	var got int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
	}))
	defer up.Close()
	p := servers.NewProxy(t, up.URL)
	// 64 KiB at 256 KiB/s takes about 250 ms.
	p.Inject(servers.ThrottleUpload(256<<10), 1)
	start := time.Now()
	resp, err := http.Post(p.URL+"/up", "application/octet-stream", bytes.NewReader(make([]byte, 64<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); took < 200*time.Millisecond || got != 64<<10 {
		t.Fatalf("64 KiB upload at 256 KiB/s: %d bytes in %v", got, took)
	}
}
