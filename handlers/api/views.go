package api

import (
	"time"

	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// The JSON shapes of the API, as components/schemas of the OpenAPI
// document names them. They are separate from the engine's types so the
// wire format changes only when the document does.

// CatalogList is GET /api/v1/catalogs.
type CatalogList struct {
	Items []Catalog `json:"items"`
}

// Catalog is one catalog's state.
type Catalog struct {
	Name                string     `json:"name"`
	Image               string     `json:"image"`
	PollIntervalSeconds float64    `json:"pollIntervalSeconds,omitempty"`
	Phase               string     `json:"phase"`
	Progress            *Progress  `json:"progress,omitempty"`
	Running             *Operation `json:"running,omitempty"`
	Queued              *Operation `json:"queued,omitempty"`
	LastSync            *Operation `json:"lastSync,omitempty"`
	NextRetry           time.Time  `json:"nextRetry,omitzero"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	Published           *Published `json:"published,omitempty"`
	LastPoll            *Poll      `json:"lastPoll,omitempty"`
	ServingURL          string     `json:"servingURL"`
	StoreError          string     `json:"storeError,omitempty"`
}

// Phases of a Catalog beyond the sync phases.
const (
	PhaseIdle   = "Idle"
	PhaseQueued = "Queued"
)

// Published is the stored pointer.
type Published struct {
	Digest      string    `json:"digest"`
	Ref         string    `json:"ref"`
	ResolvedRef string    `json:"resolvedRef"`
	ResolvedAt  time.Time `json:"resolvedAt"`
	PublishedAt time.Time `json:"publishedAt"`
	// VerifiedBy is what verified the served content's signature (its
	// meta.json), when the policy required one.
	VerifiedBy string `json:"verifiedBy,omitempty"`
}

// Poll is the last poll recorded in storage.
type Poll struct {
	Time   time.Time `json:"time"`
	Ref    string    `json:"ref"`
	Digest string    `json:"digest,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// Operation is one sync the engine ran, runs or will run.
type Operation struct {
	ID              string      `json:"id"`
	Catalog         string      `json:"catalog"`
	State           string      `json:"state"`
	Reasons         []string    `json:"reasons"`
	MoreReasons     int         `json:"moreReasons,omitempty"`
	Created         time.Time   `json:"created"`
	Started         time.Time   `json:"started,omitzero"`
	Finished        time.Time   `json:"finished,omitzero"`
	QueuedSeconds   *float64    `json:"queuedSeconds,omitempty"`
	DurationSeconds *float64    `json:"durationSeconds,omitempty"`
	Progress        *Progress   `json:"progress,omitempty"`
	Result          *SyncResult `json:"result,omitempty"`
	Error           *SyncError  `json:"error,omitempty"`
}

// Progress is the last progress event of a sync.
type Progress struct {
	Phase       string    `json:"phase"`
	Time        time.Time `json:"time"`
	Digest      string    `json:"digest,omitempty"`
	Layer       int       `json:"layer,omitempty"`
	Layers      int       `json:"layers,omitempty"`
	LayerDigest string    `json:"layerDigest,omitempty"`
	BytesDone   int64     `json:"bytesDone,omitempty"`
	BytesTotal  int64     `json:"bytesTotal,omitempty"`
	Bundles     int       `json:"bundles,omitempty"`
	Packages    int       `json:"packages,omitempty"`
	Objects     int       `json:"objects,omitempty"`
}

// SyncResult is what a successful sync did.
type SyncResult struct {
	Action          string             `json:"action"`
	Image           string             `json:"image"`
	Digest          string             `json:"digest"`
	ResolvedRef     string             `json:"resolvedRef,omitempty"`
	Mirror          string             `json:"mirror,omitempty"`
	VerifiedBy      string             `json:"verifiedBy,omitempty"`
	Objects         int                `json:"objects,omitempty"`
	BytesPulled     int64              `json:"bytesPulled"`
	Files           int                `json:"files,omitempty"`
	FilesReused     int                `json:"filesReused,omitempty"`
	DurationSeconds float64            `json:"durationSeconds"`
	Phases          map[string]float64 `json:"phases"`
}

// SyncError is why a sync failed.
type SyncError struct {
	Phase             string   `json:"phase"`
	Reason            string   `json:"reason"`
	Retryable         bool     `json:"retryable"`
	RetryAfterSeconds *float64 `json:"retryAfterSeconds,omitempty"`
	Message           string   `json:"message"`
}

func seconds(d time.Duration) *float64 {
	s := max(d, 0).Seconds()
	return &s
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func operationView(op *engine.Operation) *Operation {
	if op == nil {
		return nil
	}
	v := &Operation{
		ID: op.ID, Catalog: op.Catalog, State: string(op.State), MoreReasons: op.MoreReasons,
		Created: utc(op.Created), Started: utc(op.Started), Finished: utc(op.Finished),
		Progress: progressView(op.Progress), Result: resultView(op.Result), Error: errorView(op.Error),
	}
	// Reasons quote webhook and CloudEvent fields.
	v.Reasons = make([]string, len(op.Reasons))
	for i, r := range op.Reasons {
		v.Reasons[i] = truncate.Text(r, truncate.REST)
	}
	if !op.Started.IsZero() {
		v.QueuedSeconds = seconds(op.Started.Sub(op.Created))
		if !op.Finished.IsZero() {
			v.DurationSeconds = seconds(op.Finished.Sub(op.Started))
		}
	}
	return v
}

func progressView(e *pipeline.Event) *Progress {
	if e == nil {
		return nil
	}
	return &Progress{
		Phase: string(e.Phase), Time: utc(e.Time), Digest: e.Digest,
		Layer: e.Layer, Layers: e.Layers, LayerDigest: e.LayerDigest,
		BytesDone: e.BytesDone, BytesTotal: e.BytesTotal,
		Bundles: e.Bundles, Packages: e.Packages, Objects: e.Objects,
	}
}

func resultView(r *pipeline.Result) *SyncResult {
	if r == nil {
		return nil
	}
	v := &SyncResult{
		Action: string(r.Action), Image: r.Image, Digest: r.Digest, ResolvedRef: r.ResolvedRef, Mirror: r.Mirror, VerifiedBy: r.VerifiedBy,
		Objects: r.Meta.Objects, BytesPulled: r.BytesPulled, Files: r.Files, FilesReused: r.FilesReused,
		DurationSeconds: *seconds(r.Duration), Phases: make(map[string]float64, len(r.Phases)),
	}
	for ph, d := range r.Phases {
		v.Phases[string(ph)] = *seconds(d)
	}
	return v
}

func errorView(e *pipeline.Error) *SyncError {
	if e == nil {
		return nil
	}
	v := &SyncError{Phase: string(e.Phase), Reason: string(e.Reason), Retryable: e.Retryable, Message: e.Error()}
	if e.Err != nil {
		// The reason, phase and kind have fields of their own.
		v.Message = e.Err.Error()
	}
	// Registry and store errors may quote what the server answered,
	// validation errors the names and paths of the image.
	v.Message = truncate.Text(v.Message, truncate.REST)
	if e.RetryAfter > 0 {
		v.RetryAfterSeconds = seconds(e.RetryAfter)
	}
	return v
}

func publishedView(p catalog.Pointer) *Published {
	return &Published{
		Digest: p.Digest, Ref: p.Ref, ResolvedRef: p.ResolvedRef,
		ResolvedAt: utc(p.ResolvedAt), PublishedAt: utc(p.PublishedAt),
	}
}

func pollView(p catalog.Poll) *Poll {
	return &Poll{Time: utc(p.Time), Ref: p.Ref, Digest: p.Digest, Error: truncate.Text(p.Error, truncate.REST)}
}

// phaseOf says what the engine is doing with a catalog: the running
// sync's phase (Resolving until its first event arrives), Queued, the
// last sync's outcome, or Idle when this replica has run none.
func phaseOf(st engine.CatalogState) string {
	switch {
	case st.Running != nil && st.Running.Progress != nil:
		return string(st.Running.Progress.Phase)
	case st.Running != nil:
		return string(pipeline.PhaseResolving)
	case st.Queued != nil:
		return PhaseQueued
	case st.Last != nil && st.Last.State == engine.OpFailed:
		return string(pipeline.PhaseFailed)
	case st.Last != nil:
		return string(pipeline.PhasePublished)
	}
	return PhaseIdle
}
