package stall

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// tickBody yields a byte every pace, n times, and ends with EOF; a
// cancelled ctx fails the next read, as a cancelled connection does.
type tickBody struct {
	ctx  context.Context
	n    int
	pace time.Duration
}

func (b *tickBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	select {
	case <-b.ctx.Done():
		return 0, context.Cause(b.ctx)
	case <-time.After(b.pace):
	}
	b.n--
	p[0] = 'x'
	return 1, nil
}

func (b *tickBody) Close() error { return nil }

// inMemory answers like the test server in stall_test.go, in this
// process and on the bubble's clock: a RoundTripper that honours its
// request's context as net/http's does.
func inMemory(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	answer := func(body io.ReadCloser) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: body, Request: req}, nil
	}
	switch req.URL.Path {
	case "/hang":
		<-ctx.Done()
		return nil, context.Cause(ctx)
	case "/stop": // a byte, then silence
		return answer(io.NopCloser(io.MultiReader(strings.NewReader("part"), &tickBody{ctx: ctx, n: 1, pace: time.Hour})))
	case "/slow":
		return answer(&tickBody{ctx: ctx, n: 10, pace: d / 3})
	case "/upload":
		var n int64
		for buf := make([]byte, 512); ; {
			if ctx.Err() != nil { // a cancelled request stops sending
				return nil, context.Cause(ctx)
			}
			m, err := req.Body.Read(buf)
			n += int64(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		}
		return answer(io.NopCloser(strings.NewReader(strings.Repeat("y", int(n)))))
	}
	return nil, os.ErrNotExist
}

// Silence of d fails a request, before its answer or within its body;
// transfers slower than d in all, in either direction, go on. On the
// bubble's clock: no real waiting, and a busy machine changes nothing.
func TestTransportFailsOnlySilence(t *testing.T) {
	for name, wrap := range map[string]func() Doer{
		"Transport": func() Doer { return &http.Client{Transport: Transport(roundTripper(inMemory), d)} },
		"Client":    func() Doer { return Client(&http.Client{Transport: roundTripper(inMemory)}, d) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := wrap()
				do := func(method, path string, body io.Reader) (string, time.Duration, error) {
					start := time.Now()
					req, _ := http.NewRequest(method, "http://stall.test"+path, body)
					resp, err := c.Do(req)
					if err != nil {
						return "", time.Since(start), err
					}
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					return string(b), time.Since(start), err
				}
				for _, path := range []string{"/hang", "/stop"} {
					_, took, err := do(http.MethodGet, path, nil)
					if !errors.Is(err, ErrStalled) || took != d {
						t.Errorf("%s: %v after %v, want ErrStalled after %v", path, err, took, d)
					}
				}
				if b, took, err := do(http.MethodGet, "/slow", nil); err != nil || b != strings.Repeat("x", 10) || took <= d {
					t.Errorf("slow response: %q %v after %v", b, err, took)
				}
				if b, took, err := do(http.MethodPut, "/upload", &slowBody{left: 10}); err != nil || len(b) != 10 || took <= d {
					t.Errorf("slow upload: %q %v after %v", b, err, took)
				}
			})
		})
	}
}

// pacedConn is a ResponseWriter whose client reads a MiB every perMiB
// (0: it reads nothing), with a write deadline as a connection has one,
// on the bubble's clock.
type pacedConn struct {
	header   http.Header
	perMiB   time.Duration
	deadline time.Time
	sent     int
}

func (c *pacedConn) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}

func (c *pacedConn) WriteHeader(int) {}

func (c *pacedConn) SetWriteDeadline(t time.Time) error {
	c.deadline = t
	return nil
}

func (c *pacedConn) Write(p []byte) (int, error) {
	took := c.perMiB * time.Duration(len(p)) / (1 << 20)
	if c.perMiB == 0 || (!c.deadline.IsZero() && time.Now().Add(took).After(c.deadline)) {
		time.Sleep(time.Until(c.deadline)) // with no deadline, never returns
		return 0, os.ErrDeadlineExceeded
	}
	time.Sleep(took)
	c.sent += len(p)
	return len(p), nil
}

// A client that stops reading is cut off after d; one that reads slowly
// gets everything, sent in many writes or in one; a deadline an earlier
// request left on the connection does not cut off the next one.
func TestResponsesJudgeProgress(t *testing.T) {
	const d = 2 * time.Second
	const total = 16 << 20
	chunk := make([]byte, 64<<10)
	all := make([]byte, total)
	write := map[string]func(w http.ResponseWriter) error{
		"many writes": func(w http.ResponseWriter) error {
			for range total / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
			return nil
		},
		"one write": func(w http.ResponseWriter) error {
			_, err := w.Write(all)
			return err
		},
	}
	serve := func(c *pacedConn, write func(http.ResponseWriter) error) (err error) {
		Responses(d)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			err = write(w)
		})).ServeHTTP(c, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}})
		return err
	}
	for name, write := range write {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				if err := serve(&pacedConn{}, write); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != d {
					t.Errorf("a client that reads nothing: %v after %v, want a failed write after %v", err, time.Since(start), d)
				}
				// 16 MiB at a MiB per d/10 takes longer than d in all.
				slow := &pacedConn{perMiB: d / 10}
				if err := serve(slow, write); err != nil || slow.sent != total {
					t.Errorf("a slow reader: %d bytes, %v", slow.sent, err)
				}
				left := &pacedConn{perMiB: d / 10, deadline: time.Now().Add(-time.Second)}
				if err := serve(left, write); err != nil || left.sent != total {
					t.Errorf("after an earlier request's deadline: %d bytes, %v", left.sent, err)
				}
			})
		})
	}
}
