package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ErrStalled is returned when a registry sends nothing for the stall
// timeout: no response to a request, or no byte of a body for that long.
// A registry that keeps a connection open without sending would otherwise
// hold a sync, and the catalog's status, at "Pulling" for ever.
var ErrStalled = errors.New("registry stalled")

// DefaultStallTimeout is how long a registry may send nothing.
const DefaultStallTimeout = time.Minute

// stallTransport aborts a request (or its body) once the registry has
// sent nothing for d. Slow transfers are fine; silent ones are not.
type stallTransport struct {
	base http.RoundTripper
	d    time.Duration
}

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.d, func() { cancel(ErrStalled) })
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
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
	resp.Body = &stallBody{rc: resp.Body, ctx: ctx, cancel: cancel, timer: timer, d: t.d}
	return resp, nil
}

type stallBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
	once   sync.Once
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), ErrStalled) {
		err = fmt.Errorf("%w: no data for %v", ErrStalled, b.d)
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
	return b.rc.Close()
}
