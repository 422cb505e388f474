package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// barObserver draws one self-rewriting line on a terminal.
type barObserver struct {
	w    io.Writer
	done chan struct{}
	last time.Time
}

func newBar(w io.Writer) *barObserver { return &barObserver{w: w, done: make(chan struct{})} }

func (b *barObserver) Observe(e pipeline.Event) {
	if e.Phase == pipeline.PhasePulling && e.BytesTotal > 0 && time.Since(b.last) < 50*time.Millisecond && e.BytesDone < e.BytesTotal {
		return
	}
	b.last = time.Now()
	fmt.Fprintf(b.w, "\r\033[K%s", describe(e, true))
	if e.Terminal() {
		fmt.Fprintln(b.w)
		close(b.done)
	}
}

// logObserver writes one log line per phase, and byte counts at most
// once a second, for logs and CI.
type logObserver struct {
	log  *slog.Logger
	done chan struct{}
	last time.Time
}

func newLogObserver(l *slog.Logger) *logObserver {
	return &logObserver{log: l, done: make(chan struct{})}
}

func (o *logObserver) Observe(e pipeline.Event) {
	if e.Phase == pipeline.PhasePulling && e.BytesDone > 0 && e.BytesDone < e.BytesTotal && time.Since(o.last) < time.Second {
		return
	}
	o.last = time.Now()
	o.log.Info(describe(e, false), "catalog", e.Catalog, "phase", string(e.Phase))
	if e.Terminal() {
		close(o.done)
	}
}

// describe renders an event as the one-line message a status would carry.
func describe(e pipeline.Event, bar bool) string {
	switch e.Phase {
	case pipeline.PhaseResolving:
		return "Resolving"
	case pipeline.PhasePulling:
		s := fmt.Sprintf("Pulling %s layer %d/%d: %s/%s", short(e.Digest), e.Layer, e.Layers, humanBytes(e.BytesDone), humanBytes(e.BytesTotal))
		if bar && e.BytesTotal > 0 {
			const width = 24
			n := int(float64(width) * float64(e.BytesDone) / float64(e.BytesTotal))
			n = min(max(n, 0), width)
			s += " [" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
		}
		return s
	case pipeline.PhaseUnpacking:
		return "Unpacking " + short(e.Digest)
	case pipeline.PhaseValidating:
		return fmt.Sprintf("Validating %d bundles", e.Bundles)
	case pipeline.PhaseIndexing:
		return fmt.Sprintf("Indexing %d objects", e.Objects)
	case pipeline.PhasePublishing:
		return "Publishing " + short(e.Digest)
	case pipeline.PhasePublished:
		if e.Result != nil {
			// The action says what happened: Published, UpToDate or Reused.
			return fmt.Sprintf("%s %s in %s", e.Result.Action, short(e.Digest), e.Result.Duration.Round(time.Millisecond))
		}
		return "Published " + short(e.Digest)
	case pipeline.PhaseFailed:
		// The command's last line says why, once.
		return "Failed"
	}
	return string(e.Phase)
}

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13] + "…"
	}
	return d
}

// humanBytes renders n in B, KB, MB or GB (powers of 1000), with one
// decimal below ten units: "512 B", "1.5 MB", "35 KB".
func humanBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1e3, "KB"
	for _, u := range []string{"MB", "GB"} {
		if v < 999.5 {
			break
		}
		v, unit = v/1e3, u
	}
	if v < 9.95 {
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// withoutSyncFailed drops the pipeline's "sync failed" warning: sync's
// progress says it failed and its last line says why.
type withoutSyncFailed struct{ slog.Handler }

func (h withoutSyncFailed) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "sync failed" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h withoutSyncFailed) WithAttrs(as []slog.Attr) slog.Handler {
	return withoutSyncFailed{h.Handler.WithAttrs(as)}
}

func (h withoutSyncFailed) WithGroup(name string) slog.Handler {
	return withoutSyncFailed{h.Handler.WithGroup(name)}
}
