package metrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecorderRecordsWhatWasSent: the final status (not an informational
// 1xx), 200 when only a body or a flush was written, and every body byte,
// whichever way it was written.
func TestRecorderRecordsWhatWasSent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, bytes.Repeat([]byte("x"), 70000), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		bytes  int
	}{
		{"nothing", func(http.ResponseWriter) {}, 0, 0},
		{"status", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) }, 404, 0},
		{"early hints first", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "short and stout")
		}, 418, 15},
		{"body only", func(w http.ResponseWriter) { io.WriteString(w, "ok\n") }, 200, 3},
		{"flush only", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, 200, 0},
		{"copy from a file", func(w http.ResponseWriter) {
			f, _ := os.Open(file)
			defer f.Close()
			io.Copy(w, f)
		}, 200, 70000},
		{"copy from a reader", func(w http.ResponseWriter) { io.Copy(w, strings.NewReader("abc")) }, 200, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := &recorder{ResponseWriter: w}
				c.write(rec)
				if rec.status != c.status || rec.bytes != c.bytes {
					t.Errorf("recorded %d, %d bytes; want %d, %d", rec.status, rec.bytes, c.status, c.bytes)
				}
				if http.NewResponseController(rec).SetWriteDeadline(deadline()) != nil {
					t.Error("the writer underneath is not reachable through Unwrap")
				}
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if len(b) != c.bytes {
				t.Errorf("client got %d bytes, want %d", len(b), c.bytes)
			}
		})
	}
}

func deadline() (t time.Time) { return time.Now().Add(time.Minute) }
