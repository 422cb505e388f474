package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/catalogsync/catalogsync/storage"
)

// Run applies status with the workers until ctx ends, then waits for them
// and returns ctx's error.
func (w *Writer) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return ErrRunning
	}
	w.running = true
	w.mu.Unlock()
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return ctx.Err()
}

// processNext writes one queued catalog's status; false once the queue
// is shut down.
func (w *Writer) processNext(ctx context.Context) bool {
	name, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(name)
	en, wait, err := w.write(ctx, name)
	if en == nil || ctx.Err() != nil {
		return true
	}
	w.requeue(ctx, en, wait, err)
	return true
}

// write brings one catalog's status up to date, or says how long to wait
// before it may. It returns a nil entry for a catalog that is gone.
func (w *Writer) write(ctx context.Context, name string) (*entry, time.Duration, error) {
	o, ok := w.view.get(name)
	if !ok {
		w.mu.Lock()
		delete(w.entries, name) // a catalog created again gets a new one
		w.mu.Unlock()
		w.queue.Forget(name)
		return nil, 0, nil
	}
	w.mu.Lock()
	en := w.entryLocked(name)
	w.mu.Unlock()
	wait, err := w.step(ctx, en, o)
	return en, wait, err
}

// requeue queues the catalog again after a write: with the per-item
// backoff after a failure, after wait otherwise.
func (w *Writer) requeue(ctx context.Context, en *entry, wait time.Duration, err error) {
	switch {
	case errors.Is(err, errConflict):
		// Our view was stale; the informer brings the newer one.
		w.queue.AddRateLimited(en.name)
	case err != nil:
		// NotFound too: right after an apiserver restart the resource
		// is not served yet. A real deletion reaches us through the
		// informer.
		en.failures++
		w.logFailure(ctx, en.failures, "status update failed, retrying", "catalog", en.name, "err", err)
		w.queue.AddRateLimited(en.name)
	default:
		if en.failures > 0 {
			w.log.Info("status updated after failures", "catalog", en.name, "failures", en.failures)
			en.failures = 0
		}
		w.queue.Forget(en.name)
		if wait > 0 {
			w.queue.AddAfter(en.name, wait)
		}
	}
}

// errConflict: the object changed since the status was computed.
var errConflict = errors.New("ClusterCatalog changed since it was read")

// step brings one catalog's status up to date, or says how long to wait
// before it may.
func (w *Writer) step(ctx context.Context, en *entry, o object) (time.Duration, error) {
	if w.leftAlone(ctx, en, o) {
		return 0, nil
	}
	var wait soonest
	if !w.followOnly {
		// A sync's Progressing does not follow from the pointer: it goes
		// out before the pointer is read, so a hung store cannot hold back
		// the failure it caused. The step below then finds it applied.
		r := w.render(en, o)
		d, err := w.writeProgressing(ctx, en, &r)
		if err != nil {
			return 0, err
		}
		wait.add(d)
	}
	if d, err := w.refreshPointer(ctx, en); err != nil {
		wait.add(d)
	}
	wait.add(w.ensureLabel(ctx, en, o))
	r := w.render(en, o)
	wait.add(r.hold)
	writeServ := !sameServing(r.serv, r.base)
	if writeServ && digestOf(r.serv) != digestOf(r.base) && r.now.Sub(en.ptr.readAt) > time.Second {
		// Before the digest on the status changes, read the pointer
		// again: a view older than another replica's would move the
		// status back.
		w.mu.Lock()
		en.ptrStale = true
		w.mu.Unlock()
		return time.Millisecond, nil
	}
	// Progressing first: a reader that sees the new Serving sees how the
	// sync that made it ended.
	d, err := w.writeProgressing(ctx, en, &r)
	if err != nil {
		return 0, err
	}
	wait.add(d)
	if writeServ {
		// Computed against the status before our Progressing apply,
		// which touched no field of it.
		if _, err := w.apply(ctx, en, w.manager, r.rv, r.serv); err != nil {
			return 0, err
		}
	}
	return time.Duration(wait), nil
}

// soonest keeps the shortest positive wait added.
type soonest time.Duration

// ensureLabel sets the metadata.name label where it is missing, and
// returns how long to wait before trying again after a failure. The label
// is a convenience: failing to set it must not hold the status back.
func (w *Writer) ensureLabel(ctx context.Context, en *entry, o object) time.Duration {
	w.mu.Lock()
	needLabel := !o.labeled && !en.labelDone
	w.mu.Unlock()
	if !needLabel || w.now().Before(en.labelRetry) {
		return 0
	}
	if err := w.applyLabel(ctx, en); err != nil {
		d := w.backoff.Delay(en.labelFailures, 0)
		en.labelFailures++
		en.labelRetry = w.now().Add(d)
		w.logFailure(ctx, en.labelFailures, "set metadata.name label", "catalog", en.name, "err", err)
		return d
	}
	en.labelFailures = 0
	return 0
}

// writeProgressing applies r's Progressing condition when it changed, at
// most every MinInterval for updates of the same state (byte counts), and
// says how long to wait for the next. On success r's base and rv are the
// status the apply returned.
func (w *Writer) writeProgressing(ctx context.Context, en *entry, r *rendered) (time.Duration, error) {
	if r.prog == nil || sameProgressing(r.prog, r.base) {
		w.markFlushed(en, r.endedAt, r.key)
		return 0, nil
	}
	if next := en.appliedAt.Add(w.interval); r.key == en.appliedKey && r.now.Before(next) {
		return next.Sub(r.now), nil
	}
	got, err := w.apply(ctx, en, w.progressManager(), r.rv, &Status{Conditions: []metav1.Condition{*r.prog}})
	if err != nil {
		return 0, err
	}
	r.base, r.rv = got.status, got.rv
	en.appliedAt = r.now
	if strings.HasPrefix(r.key, "wait/") {
		w.mu.Lock()
		en.waitShown = true
		w.mu.Unlock()
	}
	w.markFlushed(en, r.endedAt, r.key)
	return 0, nil
}

// markFlushed notes that the status shows the state of key, and the end
// of the sync that ended at endedAt if it has ended.
func (w *Writer) markFlushed(en *entry, endedAt time.Time, key string) {
	if key != "" {
		en.appliedKey = key
	}
	w.mu.Lock()
	if endedAt.After(en.flushed) {
		en.flushed = endedAt
	}
	w.mu.Unlock()
}

// refreshPointer re-reads the published pointer when it is stale; on
// failure it returns how long to wait before trying again.
func (w *Writer) refreshPointer(ctx context.Context, en *entry) (time.Duration, error) {
	w.mu.Lock()
	readPtr := en.ptrStale
	en.ptrStale = false
	w.mu.Unlock()
	if !readPtr {
		return 0, nil
	}
	if err := w.readPointer(ctx, en); err != nil {
		// Status still goes out with what is known; Serving waits.
		w.mu.Lock()
		en.ptrStale = true
		w.mu.Unlock()
		d := w.backoff.Delay(en.ptrFailures, 0)
		en.ptrFailures++
		w.logFailure(ctx, en.ptrFailures, "read published pointer", "catalog", en.name, "err", err)
		return d, err
	}
	en.ptrFailures = 0
	return 0, nil
}

// logFailure warns of the first failure of a series and of every 20th;
// the others go to debug, so an outage does not flood the log.
func (w *Writer) logFailure(ctx context.Context, failures int, msg string, args ...any) {
	lvl := slog.LevelDebug
	if failures == 1 || failures%20 == 0 {
		lvl = slog.LevelWarn
	}
	w.log.Log(ctx, lvl, msg, append(args, "failures", failures)...)
}

func (w *Writer) readPointer(ctx context.Context, en *entry) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	p, err := w.view.pointer(ctx, en.name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		en.ptr = pointerState{known: true, readAt: w.now()}
	case err != nil:
		return err
	default:
		en.ptr = pointerState{known: true, exists: true, p: p, readAt: w.now()}
	}
	return nil
}

// apply applies st as manager, on the condition that the object is still
// at resourceVersion rv (when known).
func (w *Writer) apply(ctx context.Context, en *entry, manager, rv string, st *Status) (object, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return object{}, fmt.Errorf("status of %s: %w", en.name, err)
	}
	meta := map[string]any{"name": en.name}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   meta,
		"status":     raw,
	}}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	// Force: these fields are this service's to write, as a controller's.
	got, err := w.res.ApplyStatus(ctx, en.name, u, metav1.ApplyOptions{FieldManager: manager, Force: true})
	if err == nil {
		var o object
		if o, err = parseObject(got); err == nil {
			if o.status == nil {
				o.status = &Status{}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.stats.Applies++
			en.applied, en.appliedRV, en.appliedBy = o.status, o.rv, o.progressOwner
			en.ours = append(en.ours, o.rv)
			if len(en.ours) > 16 {
				en.ours = en.ours[1:]
			}
			return o, nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if apierrors.IsConflict(err) {
		w.stats.Conflicts++
		en.applied, en.appliedRV = nil, ""
		return object{}, fmt.Errorf("apply status of %s: %w", en.name, errConflict)
	}
	w.stats.Failures++
	return object{}, fmt.Errorf("apply status of %s: %w", en.name, err)
}

// leftAlone reports whether another controller (catalogd) manages the
// catalog, saying so once; its status is then not written at all.
func (w *Writer) leftAlone(ctx context.Context, en *entry, o object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case o.other != "" && en.other == "":
		en.other = o.other
		w.stats.LeftAlone++
		w.log.WarnContext(ctx, "ClusterCatalog is managed by catalogd too; leaving its status alone (its content is still served)",
			"catalog", en.name, "why", o.other)
		if w.onOther != nil {
			w.onOther(en.name, o.other)
		}
	case o.other == "" && en.other != "":
		en.other = ""
		en.ptrStale = true
		w.log.InfoContext(ctx, "ClusterCatalog no longer managed by catalogd; writing its status again", "catalog", en.name)
	}
	return en.other != ""
}

// applyLabel sets the metadata.name label, as catalogd's webhook does.
func (w *Writer) applyLabel(ctx context.Context, en *entry) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": map[string]any{
			"name":   en.name,
			"labels": map[string]any{MetadataNameLabel: en.name},
		},
	}}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	got, err := w.res.Apply(ctx, en.name, u, metav1.ApplyOptions{FieldManager: w.manager, Force: true})
	if err != nil {
		return fmt.Errorf("apply label of %s: %w", en.name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Labels++
	en.labelDone = true
	en.ours = append(en.ours, got.GetResourceVersion())
	// The answer is the object with its status: the status apply that
	// follows starts from it, not from the version before the label.
	if o, err := parseObject(got); err == nil {
		en.applied, en.appliedRV, en.appliedBy = cmp.Or(o.status, &Status{}), o.rv, o.progressOwner
	}
	return nil
}
