package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
)

// RouteUnmatched is the route label of requests no route matched (404s
// of unknown paths): raw paths would make a series per scanner probe.
const RouteUnmatched = "unmatched"

// knownMethods bounds the method label; anything else is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// Request is what Observe recorded of one answered request.
type Request struct {
	// Request is the request as the handler got it.
	Request *http.Request
	// Route is chi's route pattern ("/catalogs/{name}/api/v1/all", never
	// the raw path), or RouteUnmatched.
	Route string
	// Status is the status sent: 200 when the handler wrote nothing.
	Status int
	// Bytes counts the body bytes written.
	Bytes    int
	Duration time.Duration
}

// Observe returns a middleware that wraps each response once, recording
// its status and size, and hands the record to every fn when the handler
// returns: the metrics and the request log read one wrapper, not one each.
//
// Install it with Use on the top chi router; wrapped around a chi router
// instead, it hands the router a routing context to fill in.
func Observe(fns ...func(Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rctx := chi.RouteContext(r.Context())
			if rctx == nil {
				// A chi router reuses a context it finds instead of making
				// and recycling its own, so the pattern survives until here.
				rctx = chi.NewRouteContext()
				r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
			}
			ww := &recorder{ResponseWriter: w}
			next.ServeHTTP(ww, r)
			q := Request{Request: r, Route: rctx.RoutePattern(), Status: ww.status, Bytes: ww.bytes, Duration: time.Since(start)}
			if q.Status == 0 {
				q.Status = http.StatusOK // nothing written: net/http sends 200
			}
			if q.Route == "" {
				q.Route = RouteUnmatched
			}
			for _, fn := range fns {
				fn(q)
			}
		})
	}
}

// ObserveHTTP counts a request and times it by method, route and status
// code. Give it to Observe.
func (m *Metrics) ObserveHTTP(q Request) {
	method := q.Request.Method
	if !knownMethods[method] {
		method = "OTHER"
	}
	code := strconv.Itoa(q.Status)
	m.httpRequests.with(method, q.Route, code).inc(1)
	m.httpDuration.with(method, q.Route, code).observe(q.Duration.Seconds())
}

// HTTPMiddleware is Observe(m.ObserveHTTP): requests counted and timed
// alone. With a request log too, give both to one Observe.
func (m *Metrics) HTTPMiddleware(next http.Handler) http.Handler {
	return Observe(m.ObserveHTTP)(next)
}
