package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/catalogsync/catalogsync/storage"
)

// readyKey is Stat'ed by /readyz. It never exists: "does not exist" is an
// answer, which is all readiness needs, and costs no read of content.
const readyKey = "catalogs/.ready"

// healthz answers while the process serves HTTP: a failing store must not
// get the pod restarted, only taken out of rotation (readyz).
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // the client left; nothing to tell it
}

// readyz answers 200 when the store answers a Stat within the ready
// timeout, 503 otherwise: without its store a replica can serve nothing.
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.readyCheck != nil {
		if err := h.readyCheck(); err != nil {
			h.log.Debug("api: not ready", "err", err)
			w.Header().Set("Retry-After", "1")
			writeProblem(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.readyTimeout)
	defer cancel()
	_, err := h.store.Stat(ctx, readyKey)
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		detail := "the object store failed"
		if ctx.Err() != nil && r.Context().Err() == nil {
			detail = fmt.Sprintf("the object store did not answer within %v", h.readyTimeout)
		}
		// The error may name endpoints and buckets: logged, not served.
		h.log.Warn("api: not ready", "err", err)
		w.Header().Set("Retry-After", "5")
		writeProblem(w, http.StatusServiceUnavailable, detail)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // the client left; nothing to tell it
}
