package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// RouteUnmatched is the route label of requests no route matched (404s
// of unknown paths): raw paths would make a series per scanner probe.
const RouteUnmatched = "unmatched"

// knownMethods bounds the method label; anything else is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// HTTPMiddleware counts requests and times them by method, chi route
// pattern ("/catalogs/{name}/api/v1/all", never the raw path) and status
// code. Install it with Use on the top chi router; wrapped around a chi
// router instead, it hands the router a routing context to fill in.
func (m *Metrics) HTTPMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rctx := chi.RouteContext(r.Context())
		if rctx == nil {
			// A chi router reuses a context it finds instead of making
			// and recycling its own, so the pattern survives until here.
			rctx = chi.NewRouteContext()
			r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK // nothing written: net/http sends 200
		}
		route := rctx.RoutePattern()
		if route == "" {
			route = RouteUnmatched
		}
		method := r.Method
		if !knownMethods[method] {
			method = "OTHER"
		}
		code := strconv.Itoa(status)
		m.httpRequests.WithLabelValues(method, route, code).Inc()
		m.httpDuration.WithLabelValues(method, route, code).Observe(time.Since(start).Seconds())
	})
}
