// Package events is a CloudEvents endpoint for Knative Eventing and
// registries that emit CloudEvents. It accepts the binary, structured and
// batched HTTP content modes and acts on:
//
//   - dev.knative.sources.ping (PingSource): Poller.PollDue, so the engine
//     polls every catalog that is due;
//   - dev.knative.apiserver.{resource,ref}.{add,update} (ApiServerSource
//     watching ClusterCatalogs): Trigger that catalog now;
//   - harbor.artifact.pushed, zotregistry.image.updated and
//     Microsoft.ContainerRegistry.ImagePushed: Trigger the catalogs in the
//     pushed repository, as the webhook receivers do.
//
// Replies follow Knative's delivery semantics: 202 with no body once
// handled (also for ignored and duplicate events), 400 for a malformed
// event (a sink's 400 is not retried) and 5xx never, because nothing this
// handler does fails in a way a redelivery would fix: triggers are queued
// by the engine.
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// Event types handled besides the registries' (see webhook.PushesFromCloudEvent).
const (
	PingType = "dev.knative.sources.ping"

	APIServerResourceAdd    = "dev.knative.apiserver.resource.add"
	APIServerResourceUpdate = "dev.knative.apiserver.resource.update"
	APIServerResourceDelete = "dev.knative.apiserver.resource.delete"
	APIServerRefAdd         = "dev.knative.apiserver.ref.add"
	APIServerRefUpdate      = "dev.knative.apiserver.ref.update"
	APIServerRefDelete      = "dev.knative.apiserver.ref.delete"
)

// ClusterCatalog's API group and kind, as ApiServerSource reports them.
const (
	catalogGroup = "olm.operatorframework.io"
	catalogKind  = "ClusterCatalog"
)

// Poller is implemented by the sync engine: PollDue queues a poll of every
// catalog whose interval has passed, and returns fast.
type Poller interface {
	PollDue(ctx context.Context)
}

// OpenLister is a CatalogLister that also vouches for catalogs it has not
// listed yet. A cluster-backed lister implements it: ApiServerSource can
// deliver an add before the lister's cache has the object, and the engine
// looks the catalog up itself. With a plain lister, only listed catalogs
// are triggered, so events cannot name catalogs that were never configured.
type OpenLister interface {
	webhook.CatalogLister
	AcceptsUnlisted() bool
}

// Config configures the endpoint.
type Config struct {
	// Token, when set, must be sent in Header as is or as "Bearer <token>".
	Token string `json:"token,omitempty"`
	// Audience, when set, accepts Knative Eventing's OIDC sender tokens:
	// "Authorization: Bearer <JWT>" of a Kubernetes service account issued
	// for this audience, checked with the TokenReview API (WithTokenReviewer).
	Audience string `json:"audience,omitempty"`
	// Insecure accepts events without credentials when neither Token nor
	// Audience is set: anyone who reaches /events can trigger syncs. Without
	// any of the three, New refuses the configuration.
	Insecure bool `json:"insecure,omitempty"`
	// Header holding the token (default Authorization).
	Header string `json:"header,omitempty"`
	// HostAliases for registry pushes (the webhook receivers' list).
	HostAliases []webhook.HostAlias `json:"hostAliases,omitempty"`
	// MaxBodyBytes caps request bodies (default 1 MiB).
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// PingInterval coalesces PingSource events: a ping within this long
	// (default 30s) of the last one that polled is ignored, so a flood of
	// pings costs no more store reads than one (a poll reads every
	// catalog's poll record).
	PingInterval time.Duration `json:"pingInterval,omitempty"`
	// RefUpdateInterval throttles ApiServerSource updates in Reference
	// mode, which carry no generation to tell spec changes from status
	// writes: at most one trigger per catalog per interval (default 30s).
	RefUpdateInterval time.Duration `json:"refUpdateInterval,omitempty"`
}

// Handler is the CloudEvents endpoint.
type Handler struct {
	cfg      Config
	lister   webhook.CatalogLister
	trig     webhook.Triggerer
	poller   Poller
	match    *webhook.Matcher
	seen     *webhook.Dedupe
	refSeen  *webhook.Dedupe
	log      *slog.Logger
	notices  *webhook.Notices
	outcome  func(source, outcome string)
	reviewer TokenReviewer
	now      func() time.Time
	// lastPoll is when (unix ns) a ping last polled.
	lastPoll atomic.Int64
}

// Source is the source label of the /events endpoint's outcomes, beside
// the webhook receivers' types.
const Source = "cloudevents"

// errUnmatched is an ignored event about no configured catalog.
var errUnmatched = fmt.Errorf("%w: no configured catalog", webhook.ErrIgnored)

type options struct {
	log      *slog.Logger
	now      func() time.Time
	outcome  func(source, outcome string)
	reviewer TokenReviewer
}

// Option configures a Handler.
type Option func(*options)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithOutcome calls fn with Source and the outcome (webhook.Outcome*) of
// every event and of every request refused before its events are read,
// for the metric the webhook receivers count in.
func WithOutcome(fn func(source, outcome string)) Option { return func(o *options) { o.outcome = fn } }

// WithClock replaces time.Now for the ping interval (tests). The duplicate
// and reference-update windows run on the wall clock (webhook.Dedupe).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// New returns the endpoint. poller may be nil when no PingSource is used.
func New(cfg Config, lister webhook.CatalogLister, trig webhook.Triggerer, poller Poller, opts ...Option) (*Handler, error) {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, fn := range opts {
		fn(&o)
	}
	if lister == nil || trig == nil {
		return nil, fmt.Errorf("%w: a catalog lister and a triggerer are required", webhook.ErrConfig)
	}
	m, err := webhook.NewMatcher(cfg.HostAliases)
	if err != nil {
		return nil, err
	}
	if err := checkAuthConfig(cfg, o.reviewer); err != nil {
		return nil, err
	}
	if cfg.Header == "" {
		cfg.Header = "Authorization"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = webhook.DefaultMaxBodyBytes
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.RefUpdateInterval <= 0 {
		cfg.RefUpdateInterval = 30 * time.Second
	}
	h := &Handler{
		cfg: cfg, lister: lister, trig: trig, poller: poller, match: m,
		// Knative redelivers within minutes; an hour of ids is plenty.
		seen:    webhook.NewDedupe(4096, time.Hour),
		refSeen: webhook.NewDedupe(4096, cfg.RefUpdateInterval),
		log:     o.log,
		notices: webhook.NewNotices(0),
		outcome: o.outcome, reviewer: o.reviewer,
		now: time.Now,
	}
	if o.now != nil {
		h.now = o.now
	}
	return h, nil
}

// ServeHTTP handles one request of one or more events.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	evs, ok := h.read(w, r)
	if !ok {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	var bad []string
	polled := false
	for _, ev := range evs {
		if err := h.one(ctx, ev, &polled); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		// The others were handled; a 400 keeps Knative from redelivering.
		http.Error(w, strings.Join(bad, "\n"), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// read answers what is not a delivery of authenticated, well-formed
// CloudEvents, and returns the events of one that is.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) ([]event.Event, bool) {
	if r.Method == http.MethodOptions {
		webhook.AbuseProtection(w, r)
		return nil, false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "OPTIONS, POST")
		http.Error(w, "method not allowed: events are POSTed", http.StatusMethodNotAllowed)
		return nil, false
	}
	body, status, err := webhook.ReadBody(w, r, h.cfg.MaxBodyBytes)
	if err != nil {
		if status == http.StatusRequestEntityTooLarge {
			h.report(webhook.OutcomeTooLarge)
		} else {
			h.report(webhook.OutcomeInvalid)
		}
		http.Error(w, err.Error(), status)
		return nil, false
	}
	if !h.authorized(w, r) {
		return nil, false
	}
	evs, err := webhook.ParseCloudEvents(r.Header, body)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, webhook.ErrUnsupportedMediaType) {
			status = http.StatusUnsupportedMediaType
		}
		h.report(webhook.OutcomeInvalid)
		h.log.Debug("cloudevent rejected", "err", err)
		http.Error(w, err.Error(), status)
		return nil, false
	}
	return evs, true
}

// one acts on one event of a delivery and reports its outcome; it returns
// an error only for a malformed event, which the delivery answers 400.
func (h *Handler) one(ctx context.Context, ev event.Event, polled *bool) error {
	log := h.log.With("type", ev.Type(), "source", ev.Source(), "id", ev.ID())
	if err := checkEvent(ev); err != nil {
		if !errors.Is(err, webhook.ErrIgnored) {
			h.report(webhook.OutcomeInvalid)
			return err
		}
		h.report(webhook.OutcomeIgnored)
		h.notices.Log(ctx, log, webhook.OutcomeIgnored, "cloudevent ignored", "reason", err)
		return nil
	}
	// CloudEvents ids are unique per source. Recorded only for events
	// of a type this endpoint acts on, within the length bounds.
	if h.seen.Seen(ev.Source() + "#" + ev.ID()) {
		h.report(webhook.OutcomeDuplicate)
		log.Debug("duplicate cloudevent ignored")
		return nil
	}
	err := h.handle(ctx, ev, polled, log)
	switch {
	case err == nil:
		h.report(webhook.OutcomeTriggered)
	case errors.Is(err, errUnmatched):
		h.report(webhook.OutcomeUnmatched)
		h.notices.Log(ctx, log, webhook.OutcomeUnmatched, "cloudevent matched no catalog", "reason", err)
	case errors.Is(err, webhook.ErrIgnored):
		h.report(webhook.OutcomeIgnored)
		h.notices.Log(ctx, log, webhook.OutcomeIgnored, "cloudevent ignored", "reason", err)
	default:
		h.report(webhook.OutcomeInvalid)
		log.Info("malformed cloudevent", "err", err)
		return err
	}
	return nil
}

// maxAttrBytes bounds the id, source and subject of an event: they end up
// in the duplicate window, trigger reasons and logs. Longer ones are
// refused (400) rather than cut, so two long ids cannot collide.
const maxAttrBytes = 1024

// checkEvent refuses events whose attributes are too long, and ignores
// (before anything is recorded) events of types this endpoint never acts on.
func checkEvent(ev event.Event) error {
	for _, a := range []struct{ name, v string }{{"id", ev.ID()}, {"source", ev.Source()}, {"subject", ev.Subject()}} {
		if len(a.v) > maxAttrBytes {
			return fmt.Errorf("%w: event %s of %d bytes (at most %d)", webhook.ErrMalformed, a.name, len(a.v), maxAttrBytes)
		}
	}
	switch t := ev.Type(); t {
	case PingType, APIServerResourceAdd, APIServerResourceUpdate, APIServerRefAdd, APIServerRefUpdate:
		return nil
	case APIServerResourceDelete, APIServerRefDelete:
		return fmt.Errorf("%w: deletions are the engine's to notice", webhook.ErrIgnored)
	default:
		if webhook.IsPushEventType(t) {
			return nil
		}
		return fmt.Errorf("%w: event type %s", webhook.ErrIgnored, t)
	}
}

func (h *Handler) report(outcome string) {
	if h.outcome != nil {
		h.outcome(Source, outcome)
	}
}

// handle acts on one event; errors wrap webhook.ErrIgnored or ErrMalformed.
func (h *Handler) handle(ctx context.Context, ev event.Event, polled *bool, log *slog.Logger) error {
	switch t := ev.Type(); t {
	case PingType:
		if h.poller == nil {
			return fmt.Errorf("%w: no poller configured", webhook.ErrIgnored)
		}
		// One poll answers a whole batch of pings, and every ping within
		// PingInterval of it.
		if *polled {
			return nil
		}
		if !h.pollNow() {
			return fmt.Errorf("%w: polled less than %s ago", webhook.ErrIgnored, h.cfg.PingInterval)
		}
		*polled = true
		log.Info("polling due catalogs")
		h.poller.PollDue(ctx)
		return nil
	case APIServerResourceAdd, APIServerResourceUpdate, APIServerRefAdd, APIServerRefUpdate:
		name, err := h.clusterCatalog(ev)
		if err != nil {
			return err
		}
		log.Info("sync triggered", "catalog", name)
		h.trig.Trigger(ctx, name, fmt.Sprintf("cloudevent %s %s", t, ev.Subject()))
		return nil
	}
	pushes, err := webhook.PushesFromCloudEvent(ev)
	if err != nil {
		return err
	}
	if webhook.Dispatch(ctx, h.match, h.lister.Catalogs(), pushes, h.trig, "cloudevent "+ev.Type(), log) == 0 {
		return fmt.Errorf("%w in the pushed repository", errUnmatched)
	}
	return nil
}

// pollNow reports whether a ping may poll now, and if so records it: the
// first ping, or one PingInterval after the last that polled.
func (h *Handler) pollNow() bool {
	now := h.now().UnixNano()
	for {
		last := h.lastPoll.Load()
		if last != 0 && now-last < int64(h.cfg.PingInterval) {
			return false
		}
		if h.lastPoll.CompareAndSwap(last, now) {
			return true
		}
	}
}

// clusterCatalog returns the name of the ClusterCatalog an ApiServerSource
// event is about, when it should be synced now.
func (h *Handler) clusterCatalog(ev event.Event) (string, error) {
	var name string
	switch ev.Type() {
	case APIServerResourceAdd, APIServerResourceUpdate:
		// Resource mode: the data is the object.
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name              string  `json:"name"`
				Generation        int64   `json:"generation"`
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct {
					Type               string `json:"type"`
					ObservedGeneration int64  `json:"observedGeneration"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := webhook.DecodeEventData(ev, &obj); err != nil {
			return "", err
		}
		if err := checkKind(obj.APIVersion, obj.Kind); err != nil {
			return "", err
		}
		name = obj.Metadata.Name
		if obj.Metadata.DeletionTimestamp != nil {
			return "", fmt.Errorf("%w: %s is being deleted", webhook.ErrIgnored, name)
		}
		if ev.Type() == APIServerResourceUpdate && obj.Metadata.Generation > 0 {
			// Status writes (ours included) do not bump the generation: only
			// a spec the Progressing condition has not seen is news. This
			// keeps our own status updates from triggering syncs forever.
			for _, c := range obj.Status.Conditions {
				if c.Type == "Progressing" && c.ObservedGeneration >= obj.Metadata.Generation {
					return "", fmt.Errorf("%w: %s: generation %d already observed", webhook.ErrIgnored, name, obj.Metadata.Generation)
				}
			}
		}
	default:
		// Reference mode: the data is an object reference.
		var ref struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		}
		if err := webhook.DecodeEventData(ev, &ref); err != nil {
			return "", err
		}
		if err := checkKind(ref.APIVersion, ref.Kind); err != nil {
			return "", err
		}
		name = ref.Name
		if ev.Type() == APIServerRefUpdate && catalog.ValidName(name) && h.refSeen.Seen("update/"+name) {
			// A reference cannot tell spec changes from status writes.
			return "", fmt.Errorf("%w: %s: updated again within %s", webhook.ErrIgnored, name, h.cfg.RefUpdateInterval)
		}
	}
	if !catalog.ValidName(name) {
		return "", fmt.Errorf("%w: %s event %s: invalid ClusterCatalog name %q", webhook.ErrMalformed, ev.Type(), ev.ID(), name)
	}
	if !h.known(name) {
		return "", fmt.Errorf("%w named %s", errUnmatched, name)
	}
	return name, nil
}

// known reports whether the engine syncs the named catalog.
func (h *Handler) known(name string) bool {
	for _, c := range h.lister.Catalogs() {
		if c.Name == name {
			return true
		}
	}
	ol, ok := h.lister.(OpenLister)
	return ok && ol.AcceptsUnlisted()
}

// checkKind accepts ClusterCatalogs of any version of their API group;
// ApiServerSource may watch other kinds on the same sink.
func checkKind(apiVersion, kind string) error {
	group, _, _ := strings.Cut(apiVersion, "/")
	if kind != catalogKind || group != catalogGroup {
		return fmt.Errorf("%w: %s %s is not a ClusterCatalog", webhook.ErrIgnored, apiVersion, kind)
	}
	return nil
}
