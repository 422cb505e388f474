package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/openapi"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// TestRoutesAreDocumented walks the routes Mount adds and compares them
// with the document's operations, both ways: a route served but not
// documented, or documented but not served, fails.
func TestRoutesAreDocumented(t *testing.T) {
	s := loadSpec(t)
	store := newFSStore(t)
	eng := engine.New(nil, engine.StaticCatalogs{}, store)
	h := api.New(eng, engine.StaticCatalogs{}, store, api.WithMetrics(metrics.New().Handler()))
	r := chi.NewRouter()
	h.Mount(r)

	served := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var undocumented, unserved []string
	for k := range served {
		if !documented[k] {
			undocumented = append(undocumented, k)
		}
	}
	for k := range documented {
		if !served[k] {
			unserved = append(unserved, k)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unserved)
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("routes served but not in openapi.yaml: %v\noperations in openapi.yaml not served: %v", undocumented, unserved)
	}
	if len(served) < 8 {
		t.Fatalf("walked only %v", served)
	}
}

// TestSpecCheckCatchesDrift makes sure the validation the other tests rely
// on is not vacuous: responses that differ from the document in body,
// status, content type or headers are each reported.
func TestSpecCheckCatchesDrift(t *testing.T) {
	s := loadSpec(t)
	op := `{"id":"abc","catalog":"tiny","state":"Queued","reasons":["api"],"created":"2025-01-02T03:04:05Z"}`
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	cases := []struct {
		name string
		x    exchange
	}{
		{"extra field", exchange{method: "GET", path: "/api/v1/catalogs", status: 200, header: jsonCT,
			body: []byte(`{"items":[],"next":"x"}`)}},
		{"wrong type", exchange{method: "GET", path: "/api/v1/catalogs/tiny", status: 200, header: jsonCT,
			body: []byte(`{"name":"tiny","image":"i","phase":"Idle","servingURL":"u","consecutiveFailures":"none"}`)}},
		{"phase not in enum", exchange{method: "GET", path: "/api/v1/catalogs/tiny", status: 200, header: jsonCT,
			body: []byte(`{"name":"tiny","image":"i","phase":"Sleeping","servingURL":"u","consecutiveFailures":0}`)}},
		{"missing required", exchange{method: "GET", path: "/api/v1/operations/abc", status: 200, header: jsonCT,
			body: []byte(`{"id":"abc"}`)}},
		{"undocumented status", exchange{method: "GET", path: "/api/v1/operations/abc", status: 409, header: problem,
			body: []byte(`{"type":"about:blank","title":"Conflict","status":409,"detail":"x"}`)}},
		{"wrong content type", exchange{method: "GET", path: "/api/v1/operations/abc", status: 200,
			header: http.Header{"Content-Type": {"text/html"}}, body: []byte(op)}},
		{"problem as plain JSON", exchange{method: "GET", path: "/api/v1/operations/abc", status: 404, header: jsonCT,
			body: []byte(`{"type":"about:blank","title":"Not Found","status":404,"detail":"x"}`)}},
		{"202 without Location", exchange{method: "POST", path: "/api/v1/catalogs/tiny/sync", status: 202, header: jsonCT,
			body: []byte(op)}},
		{"400 to a valid request", exchange{method: "GET", path: "/api/v1/catalogs/tiny", status: 400, header: problem,
			body: []byte(`{"type":"about:blank","title":"Bad Request","status":400,"detail":"x"}`)}},
		{"200 to an invalid request", exchange{method: "GET", path: "/api/v1/catalogs/NOT_VALID", status: 200, header: jsonCT,
			body: []byte(`{"name":"x","image":"i","phase":"Idle","servingURL":"u","consecutiveFailures":0}`)}},
		{"undocumented route", exchange{method: "GET", path: "/api/v2/catalogs", status: 200, header: jsonCT, body: []byte(`{}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.check(&c.x)
			if err == nil {
				t.Fatalf("%v passed validation", &c.x)
			}
			t.Log(strings.SplitN(err.Error(), "\n", 2)[0])
		})
	}
	// And a conforming exchange passes, so the failures above are about
	// what each case changed.
	ok := exchange{method: "POST", path: "/api/v1/catalogs/tiny/sync", status: 202,
		header: http.Header{"Content-Type": {"application/json"}, "Location": {"/api/v1/operations/abc"}}, body: []byte(op)}
	if err := s.check(&ok); err != nil {
		t.Fatalf("conforming exchange rejected: %v", err)
	}
	// The same request validation the handler must agree with rejects
	// what the handler rejects: a body of the wrong media type.
	req, _ := http.NewRequest("POST", "http://catalogsync.example.test/api/v1/catalogs/tiny/sync", strings.NewReader("x"))
	req.Header.Set("Content-Type", "text/plain")
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route, Options: s.options()})
	if err == nil {
		t.Fatal("a text/plain body passed request validation")
	}
}

// TestSpecHasExamples demands an example for every documented request
// body, response and schema, so readers of the document (and of tools
// rendering it) see what an answer looks like. loadSpec's Validate checks
// each example against its schema; a media type without a schema (the
// metrics' binary protobuf) has nothing to show.
func TestSpecHasExamples(t *testing.T) {
	s := loadSpec(t)
	var missing []string
	content := func(where string, c openapi3.Content) {
		for mt, m := range c {
			if m.Schema == nil {
				continue
			}
			if m.Example == nil && len(m.Examples) == 0 && m.Schema.Value.Example == nil {
				missing = append(missing, where+" "+mt)
			}
		}
	}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil {
				content(method+" "+path+" request", op.RequestBody.Value.Content)
			}
			for status, r := range op.Responses.Map() {
				content(method+" "+path+" "+status, r.Value.Content)
			}
		}
	}
	for name, r := range s.doc.Components.Responses {
		content("response "+name, r.Value.Content)
	}
	for name, sc := range s.doc.Components.Schemas {
		if sc.Value.Example == nil {
			missing = append(missing, "schema "+name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("no example for:\n%s", strings.Join(missing, "\n"))
	}
}

// TestSpecExamplesAreValidated makes sure the document check loadSpec runs
// rejects an example its schema does not allow, so TestSpecHasExamples'
// examples are checked, not only present.
func TestSpecExamplesAreValidated(t *testing.T) {
	doc := string(openapi.Spec())
	bad := strings.Replace(doc, "        reason: nightly rebuild\n", "        reason: \"two\\nlines\"\n", 1)
	if bad == doc {
		t.Fatal("the SyncRequest example is not where this test expects it")
	}
	d, err := openapi3.NewLoader().LoadFromData([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(context.Background()); err == nil {
		t.Fatal("an example its schema rejects passed validation")
	} else {
		t.Log(err)
	}
}
