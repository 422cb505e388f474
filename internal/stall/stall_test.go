package stall

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const d = 300 * time.Millisecond

func server(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang": // no response at all
			<-r.Context().Done()
		case "/stop": // some body, then silence
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/slow": // a byte every d/3: slow, never silent
			for range 10 {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				time.Sleep(d / 3)
			}
		case "/upload": // reads the whole (slow) body, then answers
			n, _ := io.Copy(io.Discard, r.Body)
			w.Write([]byte(strings.Repeat("y", int(n))))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// slowBody sends a byte every d/3.
type slowBody struct{ left int }

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(d / 3)
	b.left--
	p[0] = 'u'
	return 1, nil
}

// Over a real connection: what TestTransportFailsOnlySilence checks on a
// fake clock, with net/http's own cancellation.
func TestTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real waits; TestTransportFailsOnlySilence covers it on a fake clock")
	}
	t.Parallel()
	s := server(t)
	for name, c := range map[string]Doer{
		"Transport": &http.Client{Transport: Transport(http.DefaultTransport, d)},
		"Client":    Client(&http.Client{}, d),
	} {
		get := func(path string) (string, error) {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			resp, err := c.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		for _, path := range []string{"/hang", "/stop"} {
			start := time.Now()
			_, err := get(path)
			if !errors.Is(err, ErrStalled) || time.Since(start) > 10*d {
				t.Errorf("%s %s: %v after %v, want ErrStalled after about %v", name, path, err, time.Since(start), d)
			}
		}
		// Slow transfers, in either direction, last longer than d and pass.
		if b, err := get("/slow"); err != nil || b != strings.Repeat("x", 10) {
			t.Errorf("%s slow response: %q %v", name, b, err)
		}
		req, _ := http.NewRequest(http.MethodPut, s.URL+"/upload", &slowBody{left: 10})
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s slow upload: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) != 10 {
			t.Errorf("%s slow upload: answer %q", name, b)
		}
	}
}
