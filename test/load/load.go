// Package load drives request storms at a running service, for the
// end-to-end tests and the benchmarks.
package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Storm is a burst of identical POST requests, as a CI system retrying a
// webhook sends them: N requests handed out at an even pace over Over to
// Senders concurrent senders, each on a keep-alive connection of its own.
type Storm struct {
	URL     string
	Body    []byte
	Header  http.Header
	N       int
	Senders int
	Over    time.Duration
	// Timeout bounds each request (0: no bound).
	Timeout time.Duration
	// At runs At[i] just before request i is handed out, on the caller's
	// goroutine (the storm waits for it): to change something mid-storm.
	At map[int]func()
}

// Result is what a storm's senders saw.
type Result struct {
	Acks     []time.Duration // each request's time to its answer's head (or error), shortest first
	Failures []string        // the requests not answered 2xx: the error or the status
	Took     time.Duration   // from the first request handed out to the last answer
}

// Run sends the storm and returns when every request handed out has been
// answered. Cancelling ctx stops it handing out requests and cancels the
// ones in flight. When an At function does not return (t.Fatal), the
// senders still finish and stop.
func (s Storm) Run(ctx context.Context) Result {
	client := s.Client(s.Senders)
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var res Result
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range s.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				d, err := s.Send(ctx, client)
				mu.Lock()
				res.Acks = append(res.Acks, d)
				if err != nil {
					res.Failures = append(res.Failures, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	func() {
		defer wg.Wait()
		defer close(work)
		for i := range s.N {
			if f := s.At[i]; f != nil {
				f()
			}
			if ctx.Err() != nil {
				return
			}
			select {
			case work <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if next := start.Add(time.Duration(i) * s.Over / time.Duration(s.N)); time.Until(next) > 0 {
				time.Sleep(time.Until(next))
			}
		}
	}()
	res.Took = time.Since(start)
	slices.Sort(res.Acks)
	return res
}

// Client is a client as the storm's senders use: with s.Timeout, and
// keeping up to conns idle connections.
func (s Storm) Client(conns int) *http.Client {
	return &http.Client{Timeout: s.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: conns}}
}

// Send sends one of the storm's requests with client and returns how long
// until its answer's head arrived, and an error when there was no answer
// or it was not a 2xx.
func (s Storm) Send(ctx context.Context, client *http.Client) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(s.Body))
	if err != nil {
		return 0, err
	}
	if s.Header != nil {
		req.Header = s.Header.Clone()
	}
	start := time.Now()
	resp, err := client.Do(req)
	d := time.Since(start) // the answer's head: what acknowledges
	if err != nil {
		return d, err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // drained for reuse only
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return d, fmt.Errorf("status %s", resp.Status)
	}
	return d, nil
}
