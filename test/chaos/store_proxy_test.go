package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// storeProxy stands between one replica and MinIO, on MinIO's host (so a
// cut between the replica and MinIO cuts it too). It records the
// replica's pointer and lease writes as they reach the store, and can
// hold chosen requests back, as a slow link would.
type storeProxy struct {
	replica int
	url     string
	rec     *recorder

	mu    sync.Mutex
	holds []*hold
}

// hold keeps matching requests waiting until released.
type hold struct {
	match   func(method, key string) bool
	arrived chan struct{} // closed when the first matching request arrives
	release chan struct{}
	once    sync.Once

	arrivedOnce sync.Once
}

func newStoreProxy(t *testing.T, tp *topology, i int, rec *recorder) *storeProxy {
	t.Helper()
	h := tp.host("minio")
	addr := fmt.Sprintf("%s:%d", h.ip, 9100+i)
	l, err := listen(h.ns, addr)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://" + h.ip + ":9000")
	p := &storeProxy{replica: i, url: "http://" + addr, rec: rec}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // signed by the client
		},
		Transport: nsTransport(h.ns),
		// A replica cut off or killed mid-request is the point here.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, rp) }),
		ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		p.releaseAll()
		_ = srv.Close()
	})
	return p
}

// keyOf is the object key of a path-style S3 request.
func keyOf(r *http.Request) string {
	k := strings.TrimPrefix(r.URL.Path, "/"+bucket)
	return strings.TrimPrefix(k, "/")
}

func (p *storeProxy) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key := keyOf(r)
	p.wait(r, key)
	parts := strings.Split(key, "/")
	kind := ""
	if r.Method == http.MethodPut && len(parts) == 3 && parts[0] == "catalogs" && !r.URL.Query().Has("uploadId") {
		switch parts[2] {
		case "current":
			kind = kPointer
		case "syncing":
			kind = kLease
		}
	}
	if kind == "" {
		next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	start := p.rec.now()
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	var rec struct {
		Digest   string    `json:"digest"`
		Instance string    `json:"instance"`
		Replica  string    `json:"replica"`
		Expires  time.Time `json:"expires"`
	}
	_ = json.Unmarshal(decodeChunked(r.Header, body), &rec)
	p.rec.add(op{Kind: kind, Start: start, End: p.rec.now(), Catalog: parts[1], Replica: p.replica,
		OK: sw.code == http.StatusOK, Code: sw.code, Digest: rec.Digest, Holder: rec.Instance, Expires: rec.Expires,
		Wall: time.Now()})
}

// decodeChunked undoes aws-chunked encoding (streamed uploads with
// trailing checksums); other bodies pass as they are.
func decodeChunked(h http.Header, b []byte) []byte {
	if !strings.Contains(h.Get("Content-Encoding"), "aws-chunked") && !strings.HasPrefix(h.Get("X-Amz-Content-Sha256"), "STREAMING") {
		return b
	}
	var out []byte
	for {
		line, rest, ok := bytes.Cut(b, []byte("\r\n"))
		if !ok {
			return out
		}
		size, _, _ := strings.Cut(string(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil || n == 0 || int64(len(rest)) < n {
			return out
		}
		out = append(out, rest[:n]...)
		b = bytes.TrimPrefix(rest[n:], []byte("\r\n"))
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// holdBack makes requests matching match wait until the returned release
// is called; arrived is closed when the first one comes.
func (p *storeProxy) holdBack(match func(method, key string) bool) (arrived <-chan struct{}, release func()) {
	h := &hold{match: match, arrived: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.holds = append(p.holds, h)
	p.mu.Unlock()
	return h.arrived, func() {
		h.once.Do(func() { close(h.release) })
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, x := range p.holds {
			if x == h {
				p.holds = append(p.holds[:i], p.holds[i+1:]...)
				break
			}
		}
	}
}

func (p *storeProxy) wait(r *http.Request, key string) {
	p.mu.Lock()
	var waits []*hold
	for _, h := range p.holds {
		if h.match(r.Method, key) {
			waits = append(waits, h)
		}
	}
	p.mu.Unlock()
	for _, h := range waits {
		h.arrivedOnce.Do(func() { close(h.arrived) })
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}
}

func (p *storeProxy) releaseAll() {
	p.mu.Lock()
	hs := p.holds
	p.holds = nil
	p.mu.Unlock()
	for _, h := range hs {
		h.once.Do(func() { close(h.release) })
	}
}
