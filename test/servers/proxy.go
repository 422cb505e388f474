package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request classes of the default classifier, RegistryClass.
const (
	ManifestHEAD = "manifest HEAD"
	ManifestGET  = "manifest GET"
	BlobHEAD     = "blob HEAD"
	BlobGET      = "blob GET"
	Other        = "other"
)

// RegistryClass classifies OCI distribution API requests by method and path:
// /v2/<name>/manifests/<reference> and /v2/<name>/blobs/<digest>; everything
// else (uploads, tag lists, /v2/, other servers' paths) is Other.
func RegistryClass(r *http.Request) string {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/v2/") {
		return Other
	}
	// The last occurrence wins: repository names may contain "manifests".
	if i := strings.LastIndex(p, "/manifests/"); i > len("/v2") && !strings.Contains(p[i+len("/manifests/"):], "/") {
		switch r.Method {
		case http.MethodHead:
			return ManifestHEAD
		case http.MethodGet:
			return ManifestGET
		}
	}
	if i := strings.LastIndex(p, "/blobs/"); i > len("/v2") {
		d := p[i+len("/blobs/"):]
		if d != "" && !strings.Contains(d, "/") && d != "uploads" {
			switch r.Method {
			case http.MethodHead:
				return BlobHEAD
			case http.MethodGet:
				return BlobGET
			}
		}
	}
	return Other
}

// Proxy is a reverse proxy on 127.0.0.1 in front of a server. It counts and
// logs requests by class and injects faults on demand. It keeps the client's
// Host header, so registries build upload Locations that point back at the
// proxy and S3 signatures made for the proxy's address stay valid.
type Proxy struct {
	URL  string // http://127.0.0.1:port
	Host string // 127.0.0.1:port

	srv       *httptest.Server
	forward   http.Handler
	transport *http.Transport
	classify  func(*http.Request) string

	mu     sync.Mutex
	counts map[string]int
	log    []ProxyRequest
	logGen int // bumped by ResetCounts, so late statuses skip a new log
	rules  []*faultRule
}

// ProxyRequest is one request that went through the proxy.
type ProxyRequest struct {
	Method string
	Path   string
	Class  string
	// Status sent to the client, set when the proxy's handler returns (0
	// until then, or when the connection was reset before any response).
	Status int
	Fault  bool // a fault was applied to it
}

// ProxyOption configures a Proxy.
type ProxyOption func(*Proxy)

// WithClassifier replaces RegistryClass as the way requests are classified.
func WithClassifier(classify func(*http.Request) string) ProxyOption {
	return func(p *Proxy) { p.classify = classify }
}

// A Fault handles a request in place of, or around, next, which forwards the
// request to the target. A Fault that never calls next answers by itself.
type Fault func(w http.ResponseWriter, r *http.Request, next http.Handler)

type faultRule struct {
	fault   Fault
	left    int // requests still to affect; < 0 means until cleared
	classes []string
}

// NewProxy starts a proxy to target, a base URL such as Registry.URL. HTTPS
// targets are not verified (kube-apiserver's certificate is self-signed); the
// proxy itself serves plain HTTP. t.Cleanup stops it.
func NewProxy(t testing.TB, target string, opts ...ProxyOption) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		t.Fatalf("servers: proxy target %q is not a base URL (%v)", target, err)
	}
	p := &Proxy{
		classify: RegistryClass,
		counts:   map[string]int{},
		transport: &http.Transport{
			Proxy:           nil,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
	}
	for _, o := range opts {
		o(p)
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.transport,
		FlushInterval: -1, // pass bytes on as they come, so throttles and resets are exact
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	t.Cleanup(func() {
		// Closing the connections cancels the requests' contexts, which ends
		// throttled responses and delays still running.
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	class := p.classify(r)
	p.mu.Lock()
	p.counts[class]++
	var fault Fault
	for i, rule := range p.rules {
		if !rule.matches(class) {
			continue
		}
		fault = rule.fault
		if rule.left > 0 {
			rule.left--
			if rule.left == 0 {
				p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			}
		}
		break
	}
	idx, gen := len(p.log), p.logGen
	p.log = append(p.log, ProxyRequest{Method: r.Method, Path: r.URL.Path, Class: class, Fault: fault != nil})
	p.mu.Unlock()

	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		// Also runs when the reverse proxy aborts the handler with a panic.
		p.mu.Lock()
		if gen == p.logGen {
			p.log[idx].Status = rec.status
		}
		p.mu.Unlock()
	}()
	if fault == nil {
		p.forward.ServeHTTP(rec, r)
		return
	}
	fault(rec, r, p.forward)
}

func (rule *faultRule) matches(class string) bool {
	if rule.left == 0 {
		return false
	}
	if len(rule.classes) == 0 {
		return true
	}
	for _, c := range rule.classes {
		if c == class {
			return true
		}
	}
	return false
}

// Inject applies f to the next n requests of the given classes (of any class
// when none is given); n <= 0 applies it until Clear. When several injected
// faults match a request, the earliest injected one applies.
func (p *Proxy) Inject(f Fault, n int, classes ...string) {
	if n <= 0 {
		n = -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &faultRule{fault: f, left: n, classes: classes})
}

// Clear removes every injected fault; requests pass through again.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Count returns how many requests of class arrived since the start or the
// last ResetCounts. A request is counted on arrival, before it is forwarded.
func (p *Proxy) Count(class string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[class]
}

// Counts returns a copy of every class's count.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		m[k] = v
	}
	return m
}

// Requests returns a copy of the request log, oldest first.
func (p *Proxy) Requests() []ProxyRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProxyRequest(nil), p.log...)
}

// ResetCounts empties the counters and the request log.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = map[string]int{}
	p.log = nil
	p.logGen++
}

// Status answers with code and a short text body, without forwarding.
func Status(code int) Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		http.Error(w, fmt.Sprintf("injected fault: %d %s", code, http.StatusText(code)), code)
	}
}

// TooManyRequests answers 429 with a Retry-After header of retryAfter,
// rounded up to whole seconds, without forwarding.
func TooManyRequests(retryAfter time.Duration) Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
		http.Error(w, "injected fault: 429 Too Many Requests", http.StatusTooManyRequests)
	}
}

// Delay waits d (or until the request is cancelled) before forwarding.
func Delay(d time.Duration) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			next.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}
}

// ResetAfter forwards the request, passes on the response headers and the
// first n bytes of the body, then resets the connection (TCP RST), so the
// client fails mid-body. A body no longer than n goes through whole before
// the reset. With n < 0 the connection is reset before any response.
func ResetAfter(n int64) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rw := &resetWriter{ResponseWriter: w, left: n}
		if n < 0 {
			rw.reset()
			return
		}
		next.ServeHTTP(rw, r)
		rw.reset() // a short body: reset once it is all out
	}
}

// errReset is what writes return once the connection has been reset.
var errReset = errors.New("connection reset by injected fault")

type resetWriter struct {
	http.ResponseWriter
	left    int64
	started bool // the response has begun, so its headers must go out
	done    bool
}

func (w *resetWriter) WriteHeader(code int) {
	if !w.done {
		w.started = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *resetWriter) Write(b []byte) (int, error) {
	if w.done {
		return 0, errReset
	}
	w.started = true
	if int64(len(b)) <= w.left {
		w.left -= int64(len(b))
		return w.ResponseWriter.Write(b)
	}
	n, _ := w.ResponseWriter.Write(b[:w.left])
	w.reset()
	return n, errReset
}

// FlushError stops flushes (from the reverse proxy, after each write) from
// reaching the connection the server no longer owns.
func (w *resetWriter) FlushError() error {
	if w.done {
		return errReset
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *resetWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reset flushes what was written, takes the connection from the server and
// closes it with SO_LINGER 0, which sends RST instead of FIN.
func (w *resetWriter) reset() {
	if w.done {
		return
	}
	w.done = true
	rc := http.NewResponseController(w.ResponseWriter)
	if w.started {
		_ = rc.Flush() // a flush before any write would send a 200 of its own
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// Throttle forwards the request and passes the response body on at about
// bytesPerSec, in small flushed pieces.
func Throttle(bytesPerSec int64) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(&throttleWriter{ResponseWriter: w, ctx: r.Context(), rate: bytesPerSec}, r)
	}
}

type throttleWriter struct {
	http.ResponseWriter
	ctx   context.Context
	rate  int64
	start time.Time
	sent  int64
}

func (w *throttleWriter) Write(b []byte) (int, error) {
	if w.start.IsZero() {
		w.start = time.Now()
	}
	piece := max(w.rate/20, 1) // about 50 ms of data per piece
	written := 0
	for len(b) > 0 {
		k := min(int64(len(b)), piece)
		n, err := w.ResponseWriter.Write(b[:k])
		written += n
		w.sent += int64(n)
		if err != nil {
			return written, err
		}
		_ = http.NewResponseController(w.ResponseWriter).Flush()
		b = b[k:]
		due := w.start.Add(time.Duration(float64(w.sent) / float64(w.rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.ctx.Done():
				t.Stop()
				return written, w.ctx.Err()
			}
		}
	}
	return written, nil
}

func (w *throttleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StallAfter forwards the request and passes on the response headers and
// the first n bytes of the body, then sends nothing more (the connection
// stays open) until the client gives up. With n < 0 not even the headers
// are sent: the server looks hung.
func StallAfter(n int64) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if n < 0 {
			// Take the request in, so the server notices when the client
			// gives up (it watches the connection only once the body is
			// read), then never answer.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		next.ServeHTTP(&stallWriter{ResponseWriter: w, ctx: r.Context(), left: n}, r)
	}
}

type stallWriter struct {
	http.ResponseWriter
	ctx  context.Context
	left int64
}

func (w *stallWriter) Write(b []byte) (int, error) {
	if int64(len(b)) <= w.left {
		w.left -= int64(len(b))
		return w.ResponseWriter.Write(b)
	}
	n, _ := w.ResponseWriter.Write(b[:w.left])
	w.left = 0
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	<-w.ctx.Done()
	return n, w.ctx.Err()
}

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ThrottleUpload forwards the request with its body read at about
// bytesPerSec: a slow link towards the server (an object store taking an
// upload).
func ThrottleUpload(bytesPerSec int64) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Body != nil && r.Body != http.NoBody {
			r = r.Clone(r.Context())
			r.Body = &throttleReader{ReadCloser: r.Body, ctx: r.Context(), rate: bytesPerSec}
		}
		next.ServeHTTP(w, r)
	}
}

type throttleReader struct {
	io.ReadCloser
	ctx   context.Context
	rate  int64
	start time.Time
	read  int64
}

func (t *throttleReader) Read(b []byte) (int, error) {
	if t.start.IsZero() {
		t.start = time.Now()
	}
	b = b[:min(int64(len(b)), max(t.rate/20, 1))]
	n, err := t.ReadCloser.Read(b)
	t.read += int64(n)
	due := t.start.Add(time.Duration(float64(t.read) / float64(t.rate) * float64(time.Second)))
	if wait := time.Until(due); wait > 0 {
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-t.ctx.Done():
			tm.Stop()
			return n, t.ctx.Err()
		}
	}
	return n, err
}

// Chain combines faults: each one wraps the ones after it, the last wraps
// the forwarding. Chain(Delay(d), Throttle(r)) waits, then forwards slowly.
func Chain(faults ...Fault) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		h := next
		for i := len(faults) - 1; i >= 0; i-- {
			f, inner := faults[i], h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f(w, r, inner) })
		}
		h.ServeHTTP(w, r)
	}
}

// statusRecorder remembers the final status sent to the client.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
