package s3

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/servers"
)

// benchSize is about the catalog.jsonl of the 16-copy community catalog.
const benchSize = 220 << 20

// blockReader yields n bytes by repeating one random block, so producing
// the stream costs next to nothing next to storing it.
type blockReader struct {
	block []byte
	n     int64
}

func (r *blockReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(int64(len(p)), r.n)], r.block[int(r.n)%len(r.block):])
	r.n -= int64(k)
	return k, nil
}

// BenchmarkPut streams 220 MB through Put into MinIO and into the
// filesystem backend, reporting throughput (MB/s) and the heap's peak
// growth during the Put (heap-MB).
//
//	go test ./storage/s3 -run '^$' -bench Put -benchtime 3x
func BenchmarkPut(b *testing.B) {
	block := make([]byte, 1<<20+13) // odd size: reads straddle it
	rand.Read(block)
	stores := []struct {
		name string
		open func(b *testing.B) storage.Store
	}{
		{"s3", func(b *testing.B) storage.Store {
			m := servers.StartMinIO(b)
			return newTestStore(b, minioConfig(m, newBucket(b, m)))
		}},
		{"fs", func(b *testing.B) storage.Store {
			s, err := fs.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			ctx := context.Background()
			b.SetBytes(benchSize)
			var peak uint64
			b.ResetTimer()
			for i := range b.N {
				stop := heapPeak()
				b.StartTimer()
				in, err := s.Put(ctx, fmt.Sprintf("bench/%d/catalog.jsonl", i), &blockReader{block: block, n: benchSize})
				b.StopTimer()
				peak = max(peak, stop())
				if err != nil {
					b.Fatal(err)
				}
				if in.Size != benchSize {
					b.Fatalf("stored %d bytes", in.Size)
				}
				// Keep the disk use of -benchtime runs flat.
				if err := s.Delete(ctx, in.Key); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}
