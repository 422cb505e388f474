package webhook

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultNoticeInterval is how often, at most, one receiver logs at info
// level why a notification changed nothing (see Notices).
const DefaultNoticeInterval = time.Minute

// Notices logs why notifications did nothing (matched no catalog,
// ignored) at info level, at most once per interval per key (a receiver
// and an outcome), and at debug level otherwise: an operator who wonders
// why a push did not sync finds the reason, and a flood of pull events does
// not flood the log. Keys come from small fixed sets, so the map is
// bounded.
type Notices struct {
	every time.Duration
	mu    sync.Mutex
	byKey map[string]*notice
}

type notice struct {
	sometimes  rate.Sometimes
	suppressed int
}

// NewNotices returns Notices logging each key at most once per every
// (DefaultNoticeInterval when every <= 0).
func NewNotices(every time.Duration) *Notices {
	if every <= 0 {
		every = DefaultNoticeInterval
	}
	return &Notices{every: every, byKey: map[string]*notice{}}
}

// Log logs msg with args at info level unless key was logged within the
// interval; then at debug level. The info line says how many were logged
// at debug level since the last one.
func (n *Notices) Log(ctx context.Context, log *slog.Logger, key, msg string, args ...any) {
	n.mu.Lock()
	no := n.byKey[key]
	if no == nil {
		no = &notice{sometimes: rate.Sometimes{Interval: n.every}}
		n.byKey[key] = no
	}
	info := false
	no.sometimes.Do(func() { info = true })
	suppressed := no.suppressed
	if info {
		no.suppressed = 0
	} else {
		no.suppressed++
	}
	n.mu.Unlock()
	if !info {
		log.Log(ctx, slog.LevelDebug, msg, args...)
		return
	}
	if suppressed > 0 {
		args = append(args, "alsoSince", suppressed)
	}
	log.Log(ctx, slog.LevelInfo, msg, args...)
}
