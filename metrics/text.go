package metrics

import (
	"compress/gzip"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/catalogsync/catalogsync/internal/acceptgzip"
)

// contentType is Prometheus' text exposition format, the one every
// scraper reads.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// gzipWriters keep the compressors' state (hundreds of KB each) between
// scrapes; nothing is made before the first scrape that asks for gzip.
var gzipWriters sync.Pool

// serve writes every family, sorted by name, gzipped when the scraper
// accepts it (serve's router compresses nothing itself).
func (m *Metrics) serve(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, 0, 32<<10)
	for _, f := range m.reg.snapshot() {
		b = appendFamily(b, f)
	}
	// Ours all start with "catalogsync_", so these follow in order.
	b = appendRuntime(b, m.startTime)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Add("Vary", "Accept-Encoding")
	if !acceptgzip.In(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
		return
	}
	h.Set("Content-Encoding", "gzip")
	zw, _ := gzipWriters.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
	} else {
		zw.Reset(w)
	}
	if _, err := zw.Write(b); err == nil && zw.Close() == nil {
		gzipWriters.Put(zw) // a writer whose client left is dropped
	}
}

// appendFamily appends f's HELP, TYPE and series; a family without series
// is left out, as client_golang leaves out a vector never used.
func appendFamily(b []byte, f *family) []byte {
	ss := f.sorted()
	if len(ss) == 0 {
		return b
	}
	b = appendHead(b, f.name, f.help, f.kind)
	var counts []uint64
	for _, s := range ss {
		if f.kind != histogram {
			b = appendSample(b, f.name, "", f.names, s.values, "", s.value())
			continue
		}
		s.mu.Lock()
		counts = append(counts[:0], s.counts...)
		sum, n := s.sum, s.n
		s.mu.Unlock()
		var cum uint64
		for i, c := range counts {
			cum += c
			b = appendSample(b, f.name, "_bucket", f.names, s.values, f.les[i], float64(cum))
		}
		b = appendSample(b, f.name, "_sum", f.names, s.values, "", sum)
		b = appendSample(b, f.name, "_count", f.names, s.values, "", float64(n))
	}
	return b
}

func appendHead(b []byte, name, help string, k kind) []byte {
	b = append(append(append(b, "# HELP "...), name...), ' ')
	b = appendEscaped(b, help, false)
	b = append(append(append(b, "\n# TYPE "...), name...), ' ')
	return append(append(b, k...), '\n')
}

// appendSample appends one line: name and suffix, the labels (names and
// values in order, then le when given) and the value.
func appendSample(b []byte, name, suffix string, names, values []string, le string, v float64) []byte {
	b = append(append(b, name...), suffix...)
	if len(names) > 0 || le != "" {
		b = append(b, '{')
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(b, n...), `="`...)
			b = append(appendEscaped(b, values[i], true), '"')
		}
		if le != "" {
			if len(names) > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, `le="`...), le...), '"')
		}
		b = append(b, '}')
	}
	return append(appendFloat(append(b, ' '), v), '\n')
}

// appendEscaped escapes a backslash and a newline, and in a label value
// a double quote, as the format asks.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
