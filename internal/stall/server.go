package stall

import (
	"net/http"
	"time"
)

// Responses returns a middleware that abandons a response to a client
// that stops reading: each write must make progress within d, else it
// fails and the handler returns, releasing what it held (its goroutine,
// open objects, the connection). The deadline moves with every successful
// write, so a slow download that keeps reading is never cut off; only one
// that takes no byte for d is. d <= 0 returns the handler unchanged.
//
// It uses http.ResponseController's write deadline, not a watchdog of its
// own; writers that cannot set one (a test recorder) are left alone.
func Responses(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			now := time.Now()
			// Also clears a deadline an earlier request on this
			// connection left behind.
			if err := rc.SetWriteDeadline(now.Add(d)); err != nil {
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(&progressWriter{ResponseWriter: w, rc: rc, d: d, moved: now}, r)
		})
	}
}

// progressWriter moves the write deadline after writes that went through.
type progressWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	moved time.Time
}

// writeChunk bounds one write under one deadline: a large body written at
// once (a cached /metas answer) is sent in pieces, each of which moves the
// deadline, so a slow reader is judged by its progress, not by how long
// the whole body takes.
const writeChunk = 256 << 10

func (p *progressWriter) Write(b []byte) (int, error) {
	var done int
	for len(b) > 0 {
		n, err := p.ResponseWriter.Write(b[:min(len(b), writeChunk)])
		done += n
		if err != nil {
			return done, err
		}
		b = b[n:]
		// Moving the deadline costs a timer update: do it when a
		// sixteenth of d has passed, which still allows 15/16 d of silence.
		if now := time.Now(); now.Sub(p.moved) >= p.d/16 {
			p.moved = now
			_ = p.rc.SetWriteDeadline(now.Add(p.d)) // unsupported: the stall check is off, the write goes on
		}
	}
	return done, nil
}

// Flush sends buffered data, and counts as progress when it succeeds.
func (p *progressWriter) Flush() {
	if p.rc.Flush() == nil {
		p.moved = time.Now()
		_ = p.rc.SetWriteDeadline(p.moved.Add(p.d)) // as above
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
