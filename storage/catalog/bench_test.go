package catalog

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/fs"
)

// A catalog shaped like a large OperatorHub index: 300 packages, each an
// olm.package, 4 channels and 45 bundles: 15,000 objects, ~220 MB.
const (
	benchPackages   = 300
	benchChannels   = 4
	benchBundles    = 45
	benchBundleSize = 16 << 10
)

func forBenchObjects(f func(schema, pkg, name string, line []byte)) {
	pad := strings.Repeat("A", benchBundleSize)
	for p := range benchPackages {
		pkg := fmt.Sprintf("operator-%03d-for-something", p)
		f("olm.package", "", pkg, fmt.Appendf(nil, `{"schema":"olm.package","name":%q,"icon":%q}`+"\n", pkg, pad[:2000]))
		for c := range benchChannels {
			name := []string{"stable", "fast", "candidate", "alpha"}[c]
			f("olm.channel", pkg, name, fmt.Appendf(nil, `{"schema":"olm.channel","package":%q,"name":%q,"entries":%q}`+"\n", pkg, name, pad[:1000]))
		}
		for b := range benchBundles {
			name := fmt.Sprintf("%s.v1.%d.%d", pkg, b/10, b%10)
			f("olm.bundle", pkg, name, fmt.Appendf(nil, `{"schema":"olm.bundle","package":%q,"name":%q,"csv":%q}`+"\n", pkg, name, pad))
		}
	}
}

var bench struct {
	once  sync.Once
	dir   string
	store *fs.Store
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		bench.store.Close()
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchStore writes the large catalog once per test binary run.
func benchStore(b *testing.B) *fs.Store {
	bench.once.Do(func() {
		bench.dir, bench.err = os.MkdirTemp("", "catalog-bench-")
		if bench.err != nil {
			return
		}
		if bench.store, bench.err = fs.New(bench.dir); bench.err != nil {
			return
		}
		ctx := context.Background()
		start := time.Now()
		w, err := NewWriter(ctx, bench.store, "big", digestOf("big"))
		if err != nil {
			bench.err = err
			return
		}
		defer w.Abort()
		forBenchObjects(func(schema, pkg, name string, line []byte) {
			if err == nil {
				err = w.Add(schema, pkg, name, line)
			}
		})
		if err != nil {
			bench.err = err
			return
		}
		m, err := w.Commit(ctx, Meta{})
		if err != nil {
			bench.err = err
			return
		}
		bench.err = Publish(ctx, bench.store, "big", Pointer{Digest: m.Digest, ResolvedAt: time.Now()})
		fmt.Fprintf(os.Stderr, "bench catalog: %d objects, %d bytes, written in %v\n", m.Objects, m.Size, time.Since(start).Round(time.Millisecond))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.store
}

// BenchmarkIndexLoad parses the index of 15k objects (from memory: the
// cost a cold start adds on top of one Get).
func BenchmarkIndexLoad(b *testing.B) {
	var objs []obj
	forBenchObjects(func(schema, pkg, name string, line []byte) {
		// Only lengths matter to the index; keep memory small.
		objs = append(objs, obj{schema, pkg, name, make([]byte, len(line))})
	})
	data := sampleIndex(b, objs)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		idx, err := parseIndex(data)
		if err != nil || len(idx.entries) != 15000 {
			b.Fatal(err, len(idx.entries))
		}
	}
	// After the loop: b.Loop's timer reset drops earlier metrics.
	b.ReportMetric(float64(len(data)), "index-bytes")
}

// BenchmarkOpen is a cold open from the fs store: pointer, meta, index.
func BenchmarkOpen(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for b.Loop() {
		c, err := Open(ctx, s, "big")
		if err != nil || c.Meta.Objects != 15000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryByPackage answers ?package= for one package (50 objects,
// ~740 KB) out of the 220 MB catalog.
func BenchmarkQueryByPackage(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	c, err := Open(ctx, s, "big")
	if err != nil {
		b.Fatal(err)
	}
	q := func(i int) Query { return Query{Package: fmt.Sprintf("operator-%03d-for-something", i%benchPackages)} }
	_, size := c.Count(q(0))
	b.SetBytes(size)
	i := 0
	for b.Loop() {
		if err := c.Query(ctx, io.Discard, q(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkQueryByName answers ?schema=olm.bundle&name= for one bundle.
func BenchmarkQueryByName(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	c, err := Open(ctx, s, "big")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		p := i % benchPackages
		q := Query{Schema: "olm.bundle", Name: fmt.Sprintf("operator-%03d-for-something.v1.%d.%d", p, i%4, i%10)}
		if err := c.Query(ctx, io.Discard, q); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCountBySchema is the index scan alone over all 15k entries.
func BenchmarkCountBySchema(b *testing.B) {
	s := benchStore(b)
	c, err := Open(context.Background(), s, "big")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if n, _ := c.Count(Query{Schema: "olm.channel"}); n != benchPackages*benchChannels {
			b.Fatal(n)
		}
	}
}
