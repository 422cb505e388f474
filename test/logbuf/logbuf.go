// Package logbuf is a log sink that a server's goroutines (or a process's
// output copier) write while the test reads it.
package logbuf

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for one writer and concurrent readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Take returns everything written so far and empties the buffer, in one
// step: nothing written meanwhile is lost.
func (l *Buffer) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TakeJSON is Take of a JSON log: one object per line, decoded; a line
// that is no JSON object fails t.
func (l *Buffer) TakeJSON(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.Take()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
