package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/openapi"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// env is a real service: a registry holding a catalog image, a store, a
// pipeline and engine syncing from one into the other, and the API
// handler served over HTTP.
type env struct {
	t      *testing.T
	store  storage.Store
	engine *engine.Engine
	set    engine.StaticCatalogs
	srv    *httptest.Server
	// proxy is in front of the registry for the slow catalog only.
	proxy *servers.Proxy
	// digest is what the catalogs' tag resolves to.
	digest string
}

// Catalog names the envs configure.
const (
	tinyName = "tiny"
	// slowName pulls the same image as tinyName through env.proxy, where
	// tests slow it down to watch a sync run.
	slowName = "slow"
	// downName's registry refuses connections, so its syncs fail with a
	// retryable error.
	downName = "down"
)

// testLogger logs into the test's output, shown when it fails.
func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

func newFSStore(t *testing.T) storage.Store {
	t.Helper()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func minioStore(t *testing.T, m *servers.MinIO, bucket string) storage.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := s3.New(ctx, s3.Config{
		Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey,
		// One attempt: a stopped MinIO must fail fast, not after retries.
		MaxAttempts: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// closedHost returns a 127.0.0.1 address nothing listens on.
func closedHost(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// newEnv starts a registry, pushes the tiny catalog and serves an API over
// store. opts go to api.New after the env's own.
func newEnv(t *testing.T, store storage.Store, opts ...api.Option) *env {
	t.Helper()
	reg := servers.StartRegistry(t)
	img := imagebuild.FromDir(filepath.Join("..", "..", "testdata", "fbc", "tiny", "configs"), "/configs")
	digest, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), reg.Host+"/tiny/catalog:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	proxy := servers.NewProxy(t, reg.URL)
	down := closedHost(t)
	src, err := source.New(
		source.WithHosts(source.Host{Name: reg.Host, PlainHTTP: true}, source.Host{Name: proxy.Host, PlainHTTP: true},
			source.Host{Name: down, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	pl := pipeline.New(src, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	set := engine.StaticCatalogs{
		{Name: tinyName, Image: catalogspec.ParseImage(reg.Host + "/tiny/catalog:v1"), PollInterval: 10 * time.Minute},
		{Name: slowName, Image: catalogspec.ParseImage(proxy.Host + "/tiny/catalog:v1")},
		{Name: downName, Image: catalogspec.ParseImage(down + "/down/catalog:v1")},
	}
	// A long backoff keeps the failed catalog's next retry in the future
	// for the whole test.
	eng := engine.New(pl, set, store, engine.WithSettle(0, 0),
		engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	eng.Start(ctx)
	t.Cleanup(func() { cancel(); eng.Wait() })

	h := api.New(eng, set, store, append([]api.Option{
		api.WithLogger(testLogger(t)), api.WithOpen(true),
		api.WithMetrics(metrics.New().Handler()),
		api.WithBaseURL("https://catalogsync.example.test"),
	}, opts...)...)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, store: store, engine: eng, set: set, srv: srv, proxy: proxy, digest: digest}
}

// storeOnlyEnv serves an API over store with no registry: enough for
// requests that never sync.
func storeOnlyEnv(t *testing.T, store storage.Store, opts ...api.Option) *env {
	t.Helper()
	src, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	set := engine.StaticCatalogs{{Name: tinyName, Image: catalogspec.ParseImage("registry.example.test/tiny/catalog:v1")}}
	// Triggered syncs stay queued (an hour's settle) and are cancelled at
	// the end: these tests look at answers, not at syncs.
	eng := engine.New(pipeline.New(src, store, pipeline.WithVerifyReuse(true)), set, store, engine.WithSettle(time.Hour, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	eng.Start(ctx)
	t.Cleanup(func() { cancel(); eng.Wait() })
	h := api.New(eng, set, store, append([]api.Option{api.WithLogger(testLogger(t)), api.WithOpen(true), api.WithMetrics(metrics.New().Handler())}, opts...)...)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, store: store, engine: eng, set: set, srv: srv}
}

// exchange is one request and the response it got.
type exchange struct {
	method, path string
	reqHeader    http.Header
	reqBody      []byte
	status       int
	header       http.Header
	body         []byte
}

func (x *exchange) String() string {
	return fmt.Sprintf("%s %s -> %d %s %.300s", x.method, x.path, x.status, x.header.Get("Content-Type"), x.body)
}

// decode unmarshals the body into v, failing the test if it does not parse.
func (x *exchange) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(x.body, v); err != nil {
		t.Fatalf("%v: %v", x, err)
	}
}

// request describes a request to send; header values are set as given.
type request struct {
	method, path string
	header       map[string]string
	body         string
}

// spec validates exchanges against the OpenAPI document and records which
// operation answered which status, so a test can demand that every
// documented response was seen.
type spec struct {
	doc    *openapi3.T
	router routers.Router
	mu     sync.Mutex
	seen   map[string]map[int]bool // "GET /api/v1/catalogs/{name}" -> statuses
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec())
	if err != nil {
		t.Fatalf("openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &spec{doc: doc, router: router, seen: map[string]map[int]bool{}}
}

func (s *spec) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		// Security is enforced by the handler (tests check 401); the
		// document's "token or nothing" requirement always holds.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
}

// errUndocumented is returned by check for a request the document has no
// operation for.
var errUndocumented = errors.New("no documented operation")

// check validates x against the document. A request the document rejects
// must have been rejected by the handler with a 4xx, and a 400 from the
// handler must be for a request the document rejects: the handler and the
// document agree on what is valid. A documented response without content
// must have an empty body. An undocumented request returns
// errUndocumented (wrapped) and is not validated further.
func (s *spec) check(x *exchange) error {
	req, err := http.NewRequest(x.method, "http://catalogsync.example.test"+x.path, bytes.NewReader(x.reqBody))
	if err != nil {
		return err
	}
	req.Header = x.reqHeader.Clone()
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%w for %s %s: %v", errUndocumented, x.method, x.path, err)
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: s.options()}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	switch {
	case reqErr != nil && (x.status < 400 || x.status >= 500):
		return fmt.Errorf("the document rejects the request (%v) but the handler answered %d", reqErr, x.status)
	case reqErr == nil && x.status == http.StatusBadRequest:
		return fmt.Errorf("the handler answered 400 to a request the document accepts")
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.status, Header: x.header, Options: s.options()}
	out.SetBodyBytes(x.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response does not match the document: %v", err)
	}
	if resp := route.Operation.Responses.Status(x.status); resp != nil && len(resp.Value.Content) == 0 && len(x.body) > 0 {
		return fmt.Errorf("the document says %d has no body, got %d bytes", x.status, len(x.body))
	}
	s.mu.Lock()
	key := route.Method + " " + route.Path
	if s.seen[key] == nil {
		s.seen[key] = map[int]bool{}
	}
	s.seen[key][x.status] = true
	s.mu.Unlock()
	return nil
}

// checkProblem validates the body of a response to an undocumented
// request (404 unknown route, 405) against the Problem schema.
func (s *spec) checkProblem(x *exchange) error {
	if ct := x.header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var v any
	if err := json.Unmarshal(x.body, &v); err != nil {
		return err
	}
	if err := s.doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("not a Problem: %v", err)
	}
	if p := v.(map[string]any); p["status"] != float64(x.status) {
		return fmt.Errorf("problem status %v, response status %d", p["status"], x.status)
	}
	return nil
}

// missing lists the documented operation/status pairs no check has seen.
func (s *spec) missing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			for code := range op.Responses.Map() {
				var status int
				if _, err := fmt.Sscanf(code, "%d", &status); err != nil || !s.seen[key][status] {
					out = append(out, key+" "+code)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// do sends r to e's server, validates the exchange against s and returns
// it. Requests the document does not describe must be answered with a
// problem (checkProblem); anything else fails the test.
func (e *env) do(t *testing.T, s *spec, r request) *exchange {
	t.Helper()
	x := e.send(t, r)
	err := s.check(x)
	if errors.Is(err, errUndocumented) {
		// Only errors may answer what the document does not describe: 405
		// for a method, 404 for a path, 400 for a path the document's
		// router cannot even match (an escaped slash in a name).
		if !slices.Contains([]int{400, 404, 405}, x.status) {
			t.Fatalf("%v: answered an undocumented request", x)
		}
		if perr := s.checkProblem(x); perr != nil {
			t.Fatalf("%v: undocumented request, and the answer is no problem: %v", x, perr)
		}
		return x
	}
	if err != nil {
		t.Fatalf("%v: %v", x, err)
	}
	return x
}

// send sends r without validating anything.
func (e *env) send(t *testing.T, r request) *exchange {
	t.Helper()
	req, err := http.NewRequest(r.method, e.srv.URL+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &exchange{
		method: r.method, path: r.path, reqHeader: req.Header, reqBody: []byte(r.body),
		status: resp.StatusCode, header: resp.Header, body: body,
	}
}

// wantStatus fails the test unless x has the status.
func wantStatus(t *testing.T, x *exchange, status int) {
	t.Helper()
	if x.status != status {
		t.Fatalf("%v: want status %d", x, status)
	}
}

// waitOperation polls an operation until it has finished.
func (e *env) waitOperation(t *testing.T, s *spec, id string) api.Operation {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		x := e.do(t, s, request{method: http.MethodGet, path: "/api/v1/operations/" + id})
		wantStatus(t, x, http.StatusOK)
		var op api.Operation
		x.decode(t, &op)
		if op.State == string(engine.OpSucceeded) || op.State == string(engine.OpFailed) {
			return op
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s still %s", id, op.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
