package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// quietRoutes are polled by machines every few seconds; their successes are
// logged at debug level so they do not drown the rest.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// LogRequests returns a middleware that logs one structured line per
// request: method, route (chi's pattern, so a catalog name does not make
// every line distinct), path, status, duration and bytes written. 5xx are
// logged as errors, successful probes and scrapes at debug level.
//
// Install it with Use on the top chi router; it also works wrapped around
// any handler, and then gives a chi router inside it a routing context to
// fill in.
func LogRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			r, rctx := withRouteContext(r)
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			route := rctx.RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status < 400 && quietRoutes[route]:
				level = slog.LevelDebug
			}
			log.LogAttrs(r.Context(), level, "http request",
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", loggedPath(route, r.URL.Path)),
				slog.Int("status", status),
				slog.Duration("duration", time.Since(start)),
				slog.Int("bytes", ww.BytesWritten()),
			)
		})
	}
}

// withRouteContext returns r with a chi routing context, adding an empty
// one when there is none yet: a chi router reuses a context it finds
// rather than making (and recycling) its own, so the route pattern is
// still there when the handler returns.
func withRouteContext(r *http.Request) (*http.Request, *chi.Context) {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		return r, rctx
	}
	rctx := chi.NewRouteContext()
	return r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx)), rctx
}

// loggedPath is the path a request line shows. A route with a {token}
// parameter (webhook.SecretRoute) has a secret in its path, so the route is
// shown instead; so is an unmatched path under /hooks/, which may be a
// secret path with a typo or a trailing slash.
func loggedPath(route, path string) string {
	switch {
	case strings.Contains(route, "{token}"):
		return route
	case route == "unmatched" && strings.HasPrefix(path, "/hooks/"):
		return "/hooks/…"
	}
	return path
}
