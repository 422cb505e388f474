package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"golang.org/x/sync/errgroup"

	"github.com/catalogsync/catalogsync/internal/problem"
	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// The patterns are compiled at first use: their counted repeats make
// large programs, which a process that serves no API (a one-shot sync)
// would otherwise build at start.
var (
	// opID is what the document admits as an operation id.
	opID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	// syncReason is what the document admits as a sync request's reason:
	// it ends up in operation reasons and logs, so it stays short and plain.
	syncReason = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._ -]{0,64}$`) })
)

// maxSyncBody bounds a sync request's body, which holds one short reason.
const maxSyncBody = 4 << 10

// catalogName returns the request's decoded {name}, answering 400 (and
// returning false) when it is not a DNS-1123 subdomain. chi matches the
// raw path when it has escapes, so the segment is decoded here.
func catalogName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name, err := url.PathUnescape(chi.URLParam(r, "name"))
	if err != nil || !catalog.ValidName(name) {
		problem.Write(w, http.StatusBadRequest, "a catalog name is a DNS-1123 subdomain of at most 253 characters")
		return "", false
	}
	return name, true
}

func (h *Handler) lookup(name string) (catalogspec.Catalog, bool) {
	for _, c := range h.catalogs.Catalogs() {
		if c.Name == name {
			return c, true
		}
	}
	return catalogspec.Catalog{}, false
}

func (h *Handler) listCatalogs(w http.ResponseWriter, r *http.Request) {
	cats := slices.Clone(h.catalogs.Catalogs())
	slices.SortFunc(cats, func(a, b catalogspec.Catalog) int { return strings.Compare(a.Name, b.Name) })
	base := h.servingBase(r)
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	items := make([]Catalog, len(cats))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, c := range cats {
		g.Go(func() error {
			v, err := h.catalogView(gctx, c, base)
			items[i] = v
			return err
		})
	}
	if err := g.Wait(); err != nil {
		h.log.Error("api: reading catalogs from the store", "err", err)
		storeUnavailable(w)
		return
	}
	problem.JSON(w, http.StatusOK, problem.JSONType, CatalogList{Items: items})
}

func (h *Handler) getCatalog(w http.ResponseWriter, r *http.Request) {
	name, ok := catalogName(w, r)
	if !ok {
		return
	}
	c, ok := h.lookup(name)
	if !ok {
		problem.Write(w, http.StatusNotFound, fmt.Sprintf("no catalog %q is configured", name))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	v, err := h.catalogView(ctx, c, h.servingBase(r))
	if err != nil {
		h.log.Error("api: reading a catalog from the store", "catalog", name, "err", err)
		storeUnavailable(w)
		return
	}
	problem.JSON(w, http.StatusOK, problem.JSONType, v)
}

// catalogView joins the engine's state of c with what the store holds. Only
// a failing store is an error: a catalog never published has no pointer,
// and corrupt records (or a configured name the store cannot hold) are
// reported in StoreError so one bad catalog does not hide the others.
func (h *Handler) catalogView(ctx context.Context, c catalogspec.Catalog, base string) (Catalog, error) {
	v := Catalog{Name: c.Name, Image: c.Image.String(), Phase: PhaseIdle, ServingURL: base + "/" + c.Name}
	if c.PollInterval > 0 {
		v.PollIntervalSeconds = c.PollInterval.Seconds()
	}
	if st, ok := h.engine.State(c.Name); ok {
		v.Phase = phaseOf(st)
		v.Running, v.Queued, v.LastSync = operationView(st.Running), operationView(st.Queued), operationView(st.Last)
		if v.Running != nil {
			v.Progress = v.Running.Progress
		}
		v.NextRetry = utc(st.NextRetry)
		v.ConsecutiveFailures = st.Failures
	}
	var problems []string
	ptr, _, err := catalog.Current(ctx, h.store, c.Name)
	switch {
	case err == nil:
		v.Published = publishedView(ptr)
		// What verified the served content: the pointer says so when the
		// check came after the content was stored, else its meta.json.
		meta, ok, err := catalog.HasContent(ctx, h.store, c.Name, ptr.Digest)
		if err != nil {
			return v, err
		}
		v.Published.VerifiedBy = ptr.VerifiedBy
		if ok && ptr.VerifiedBy == "" {
			v.Published.VerifiedBy = meta.VerifiedBy
		}
	case errors.Is(err, storage.ErrNotExist):
	case errors.Is(err, catalog.ErrCorrupt), errors.Is(err, catalog.ErrInvalidName):
		problems = append(problems, err.Error())
	default:
		return v, err
	}
	poll, err := catalog.LastPoll(ctx, h.store, c.Name)
	switch {
	case err == nil:
		v.LastPoll = pollView(poll)
	case errors.Is(err, storage.ErrNotExist):
	case errors.Is(err, catalog.ErrCorrupt), errors.Is(err, catalog.ErrInvalidName):
		problems = append(problems, err.Error())
	default:
		return v, err
	}
	v.StoreError = truncate.Text(strings.Join(problems, "; "), truncate.REST)
	return v, nil
}

// servingBase is where the content handler serves catalogs, as clients
// outside reach it.
func (h *Handler) servingBase(r *http.Request) string {
	base := h.baseURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + h.contentPath
}

// syncRequest is the optional body of POST .../sync.
type syncRequest struct {
	Reason string `json:"reason"`
}

func (h *Handler) syncCatalog(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="catalogsync"`)
		problem.Write(w, http.StatusUnauthorized, "a valid bearer token is required")
		return
	}
	name, ok := catalogName(w, r)
	if !ok {
		return
	}
	reason, status, msg := readSyncReason(w, r)
	if status != 0 {
		problem.Write(w, status, msg)
		return
	}
	// The operation outlives the request: it must not be cancelled with it.
	op, err := h.engine.Trigger(context.WithoutCancel(r.Context()), name, reason)
	if errors.Is(err, engine.ErrUnknownCatalog) {
		problem.Write(w, http.StatusNotFound, fmt.Sprintf("no catalog %q is configured", name))
		return
	}
	if err != nil {
		// The engine fails a trigger only for an unknown catalog; anything
		// else is a bug, not the client's fault.
		h.log.Error("api: trigger", "catalog", name, "err", err)
		problem.Write(w, http.StatusInternalServerError, "the sync could not be queued")
		return
	}
	w.Header().Set("Location", Prefix+"/operations/"+op.ID)
	problem.JSON(w, http.StatusAccepted, problem.JSONType, operationView(&op))
}

// readSyncReason reads the optional JSON body of a sync request and
// returns the engine reason ("api", or "api:<reason>"), or a status and
// message to answer with.
func readSyncReason(w http.ResponseWriter, r *http.Request) (reason string, status int, msg string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSyncBody))
	if err != nil {
		return "", http.StatusBadRequest, fmt.Sprintf("the request body is unreadable or larger than %d bytes", maxSyncBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return "api", 0, ""
	}
	if msg := bodyMediaType(r.Header.Get("Content-Type")); msg != "" {
		return "", http.StatusUnsupportedMediaType, msg
	}
	// null, arrays and the like would decode into an empty request.
	if body = bytes.TrimSpace(body); body[0] != '{' {
		return "", http.StatusBadRequest, "the request body must be a JSON object"
	}
	var req syncRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "", http.StatusBadRequest, "the request body is not a sync request: " + err.Error()
	}
	if dec.More() {
		return "", http.StatusBadRequest, "the request body holds more than one JSON value"
	}
	if !syncReason().MatchString(req.Reason) {
		return "", http.StatusBadRequest, "reason must be at most 64 letters, digits, spaces, '.', '_' or '-'"
	}
	if req.Reason == "" {
		return "api", 0, ""
	}
	return "api:" + req.Reason, 0, ""
}

// bodyMediaType returns why a sync request body of Content-Type ct is
// refused, or "" when it is read as JSON. A body without a type is read as
// JSON (RFC 9110 lets the recipient decide): clients such as curl send
// none unless told.
func bodyMediaType(ct string) string {
	if strings.TrimSpace(ct) == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == problem.JSONType {
		return ""
	}
	got := truncate.Text(ct, 100)
	return fmt.Sprintf("the request body must be application/json, not %q (with curl: --json '{...}' or -H 'Content-Type: application/json')", got)
}

func (h *Handler) getOperation(w http.ResponseWriter, r *http.Request) {
	id, err := url.PathUnescape(chi.URLParam(r, "id"))
	if err != nil || !opID().MatchString(id) {
		problem.Write(w, http.StatusBadRequest, "an operation id is 1 to 64 letters, digits, '_' or '-'")
		return
	}
	op, ok := h.engine.Operation(id)
	if !ok {
		problem.Write(w, http.StatusNotFound, fmt.Sprintf("no operation %q is kept", id))
		return
	}
	problem.JSON(w, http.StatusOK, problem.JSONType, operationView(&op))
}
