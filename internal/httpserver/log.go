package httpserver

import (
	"log/slog"
	"strings"

	"github.com/catalogsync/catalogsync/metrics"
)

// quietRoutes are polled by machines every few seconds; their successes are
// logged at debug level so they do not drown the rest.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// RequestLog logs what metrics.Observe recorded: method, route (chi's
// pattern, so a catalog name does not make every line distinct), path,
// status, duration and bytes written. 5xx are logged as errors, successful
// probes and scrapes at debug level.
func RequestLog(log *slog.Logger) func(metrics.Request) {
	return func(q metrics.Request) {
		level := slog.LevelInfo
		switch {
		case q.Status >= 500:
			level = slog.LevelError
		case q.Status < 400 && quietRoutes[q.Route]:
			level = slog.LevelDebug
		}
		r := q.Request
		log.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method),
			slog.String("route", q.Route),
			slog.String("path", loggedPath(q.Route, r.URL.Path)),
			slog.Int("status", q.Status),
			slog.Duration("duration", q.Duration),
			slog.Int("bytes", q.Bytes),
		)
	}
}

// loggedPath is the path a request line shows. A route with a {token}
// parameter (webhook.SecretRoute) has a secret in its path, so the route is
// shown instead; so is an unmatched path under /hooks/, which may be a
// secret path with a typo or a trailing slash.
func loggedPath(route, path string) string {
	switch {
	case strings.Contains(route, "{token}"):
		return route
	case route == metrics.RouteUnmatched && strings.HasPrefix(path, "/hooks/"):
		return "/hooks/…"
	}
	return path
}
