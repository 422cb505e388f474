// Package stall fails HTTP requests to a server that has gone silent: no
// response, and no byte of a request or response body, for a while. Slow
// transfers go on; only silence fails. A server that keeps a connection
// open without sending would otherwise hold its caller for ever, since
// neither net/http nor the registry and S3 clients bound it by default.
package stall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ErrStalled is wrapped by the errors of a request that saw no traffic
// for the timeout.
var ErrStalled = errors.New("server stalled")

// Transport returns base wrapped so that a request fails with ErrStalled
// after d without traffic in either direction: while the request body is
// being sent, until the response headers come, and between reads of the
// response body. d <= 0 returns base.
func Transport(base http.RoundTripper, d time.Duration) http.RoundTripper {
	if d <= 0 {
		return base
	}
	return &transport{base: base, d: d}
}

// Doer is an HTTP client as the AWS SDK takes one.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client wraps an HTTP client (one the AWS SDK built, with its own TLS
// and proxy settings) like Transport wraps a RoundTripper.
func Client(next Doer, d time.Duration) Doer {
	if d <= 0 {
		return next
	}
	return doer{&transport{base: roundTripper(next.Do), d: d}}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type doer struct{ t *transport }

func (d doer) Do(r *http.Request) (*http.Response, error) { return d.t.RoundTrip(r) }

type transport struct {
	base http.RoundTripper
	d    time.Duration
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.d, func() { cancel(ErrStalled) })
	out := req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		// An upload is traffic too: a large body must not count as a
		// silent server.
		out.Body = &activeBody{rc: req.Body, timer: timer, d: t.d}
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		timer.Stop()
		stalled := errors.Is(context.Cause(ctx), ErrStalled)
		cancel(nil)
		if stalled {
			return nil, fmt.Errorf("%w: no response in %v", ErrStalled, t.d)
		}
		return nil, err
	}
	timer.Reset(t.d)
	resp.Body = &body{rc: resp.Body, ctx: ctx, cancel: cancel, timer: timer, d: t.d}
	return resp, nil
}

// activeBody resets the timer as the request body is read (sent).
type activeBody struct {
	rc    io.ReadCloser
	timer *time.Timer
	d     time.Duration
}

func (b *activeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	return n, err
}

func (b *activeBody) Close() error { return b.rc.Close() }

type body struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
	once   sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), ErrStalled) {
		err = fmt.Errorf("%w: no data for %v", ErrStalled, b.d)
	}
	return n, err
}

func (b *body) Close() error {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
	return b.rc.Close()
}
