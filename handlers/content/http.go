package content

import (
	"net/http"
	"strings"
	"time"
)

// checkConditions evaluates the conditional headers of a GET or HEAD in
// the order RFC 9110 section 13.2.2 prescribes. It returns 0 to serve the
// body, 304 Not Modified or 412 Precondition Failed.
func checkConditions(r *http.Request, etag string, mod time.Time) int {
	if im := r.Header.Get("If-Match"); im != "" {
		if !matchETag(im, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := r.Header.Get("If-Unmodified-Since"); ius != "" && !mod.IsZero() {
		if t, err := http.ParseTime(ius); err == nil && mod.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if matchETag(inm, etag, true) {
			return http.StatusNotModified
		}
		// If-None-Match present: If-Modified-Since is ignored.
		return 0
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !mod.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !mod.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// notModified answers 304 (or 412) with the validators a cache needs and
// no representation headers. As net/http does, Last-Modified is dropped
// when an ETag is sent.
func notModified(w http.ResponseWriter, code int, etag string, mod time.Time) {
	h := w.Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Last-Modified"} {
		h.Del(k)
	}
	if code == http.StatusNotModified {
		h.Set("ETag", etag)
		w.WriteHeader(code)
		return
	}
	httpError(w, code, "")
}

// matchETag reports whether the If-Match / If-None-Match list matches
// etag: "*" matches any current representation; weak comparison ignores
// the W/ prefix (for If-None-Match), strong comparison never matches a
// weak tag (for If-Match and If-Range).
func matchETag(list, etag string, weak bool) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	for list != "" {
		list = strings.TrimLeft(list, " \t,")
		if list == "" {
			break
		}
		isWeak := false
		if strings.HasPrefix(list, "W/") {
			isWeak = true
			list = list[2:]
		}
		if !strings.HasPrefix(list, `"`) {
			// Not an entity-tag: the header is malformed, nothing more
			// can be trusted to match.
			return false
		}
		end := strings.IndexByte(list[1:], '"')
		if end < 0 {
			return false
		}
		tag := list[:end+2]
		list = list[end+2:]
		if tag == etag && (weak || !isWeak) {
			return true
		}
	}
	return false
}
