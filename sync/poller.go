package sync

import (
	"context"
	"math/rand/v2"
	stdsync "sync"
	"time"

	"github.com/catalogsync/catalogsync/sync/source"
)

// Backoff computes retry delays: exponential from Min to Max with ±20%
// jitter, so replicas that failed together do not retry together.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff starts at one second and caps at five minutes.
var DefaultBackoff = Backoff{Min: time.Second, Max: 5 * time.Minute}

// Delay returns the wait before retry number attempt (0-based), never less
// than what the registry asked for.
func (b Backoff) Delay(attempt int, retryAfter time.Duration) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(d, retryAfter)
}

// Poller keeps catalogs synced in a long-running process: it syncs each
// catalog at start, then re-resolves tags every poll interval (with
// jitter), and retries failed syncs with backoff. A digest-pinned catalog
// is never polled once it is published.
type Poller struct {
	Pipeline  *Pipeline
	Backoff   Backoff
	Observers []Observer
}

// Run syncs catalogs until ctx ends. Each catalog has its own loop, so one
// slow registry does not hold up the others, and never two syncs at once.
func (p *Poller) Run(ctx context.Context, catalogs []Catalog) {
	b := p.Backoff
	if b.Min <= 0 {
		b = DefaultBackoff
	}
	var wg stdsync.WaitGroup
	for _, c := range catalogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(ctx, c, b)
		}()
	}
	wg.Wait()
}

func (p *Poller) loop(ctx context.Context, c Catalog, b Backoff) {
	attempt := 0
	for {
		_, err := p.Pipeline.Run(ctx, c, p.Observers...)
		var wait time.Duration
		switch se, _ := AsError(err); {
		case err == nil:
			attempt = 0
			if pinned(c.Image) || c.PollInterval <= 0 {
				return
			}
			wait = jitter(c.PollInterval)
		case se != nil && se.Retryable:
			wait = b.Delay(attempt, se.RetryAfter)
			attempt++
		default:
			// Terminal: only a new image behind the tag can fix it.
			if pinned(c.Image) || c.PollInterval <= 0 {
				return
			}
			wait = jitter(c.PollInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

func pinned(image string) bool {
	_, ok, _ := source.Pin(image)
	return ok
}
