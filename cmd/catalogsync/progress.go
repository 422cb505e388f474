package main

import (
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
		s := fmt.Sprintf("Pulling %s layer %d/%d: %s/%s", short(e.Digest), e.Layer, e.Layers, mb(e.BytesDone), mb(e.BytesTotal))
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
			return fmt.Sprintf("Published %s in %s (%s)", short(e.Digest), e.Result.Duration.Round(time.Millisecond), e.Result.Action)
		}
		return "Published " + short(e.Digest)
	case pipeline.PhaseFailed:
		if e.Err != nil {
			return "Failed: " + e.Err.Error()
		}
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

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
