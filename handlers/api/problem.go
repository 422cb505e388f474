package api

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/internal/problem"
)

// storeUnavailable answers a failed store read: the store, not the
// request, is at fault, and a retry may work.
func storeUnavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	problem.Write(w, http.StatusServiceUnavailable, "reading the object store failed; try again")
}

func notFound(w http.ResponseWriter, r *http.Request) {
	problem.Write(w, http.StatusNotFound, fmt.Sprintf("no route for %s", r.URL.Path))
}

// probeMethods are the methods tried to fill in Allow.
var probeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// methodNotAllowed answers 405 with the Allow header RFC 9110 requires,
// found by asking routes which methods match the path: chi does not pass
// them to a custom handler.
func methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		// Inside a mounted router the path is relative to the mount point.
		if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath != "" {
			path = rctx.RoutePath
		}
		var allow []string
		for _, m := range probeMethods {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		problem.Write(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
	}
}

// acceptJSON answers 406 to a request whose Accept header rules out JSON.
// Problems are sent as application/problem+json whatever was asked, as
// RFC 9457 suggests for clients that accept JSON.
func acceptJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accepts(r.Header.Values("Accept"), problem.JSONType) {
			problem.Write(w, http.StatusNotAcceptable, "this resource is only available as application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// accepts reports whether the Accept header values admit mediaType: no
// header admits anything; otherwise the most specific range that matches
// decides (RFC 9110 12.5.1), and q=0 means "not this".
func accepts(values []string, mediaType string) bool {
	if len(values) == 0 {
		return true
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	best, bestQ := 0, 0.0
	for _, v := range values {
		for _, rng := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
			if err != nil {
				continue
			}
			spec := 0
			switch mt {
			case mediaType:
				spec = 3
			case typ + "/*":
				spec = 2
			case "*/*":
				spec = 1
			}
			if spec <= best {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			best, bestQ = spec, q
		}
	}
	return bestQ > 0
}
