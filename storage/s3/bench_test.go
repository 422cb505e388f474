package s3

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

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
			m := servers.SharedMinIO(b)
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

// BenchmarkCopyRange compares two ways to carry an earlier object's bytes
// into a new one, as an incremental sync does with the files it reuses:
// through the client (a ranged GET streamed into Put: what the pipeline
// does) and server-side (one UploadPartCopy of the whole range). The
// published meta records catalog.jsonl's sha256, so a server-side copy
// still needs the bytes read once: "part-copy+get" is that pair, the
// GET hashed while the copy runs.
//
//	go test ./storage/s3 -run '^$' -bench CopyRange -benchtime 3x
func BenchmarkCopyRange(b *testing.B) {
	m := servers.SharedMinIO(b)
	s := newTestStore(b, minioConfig(m, newBucket(b, m)))
	ctx := context.Background()
	block := make([]byte, 1<<20+13)
	rand.Read(block)
	if _, err := s.Put(ctx, "bench/src", &blockReader{block: block, n: benchSize}); err != nil {
		b.Fatal(err)
	}
	ways := []struct {
		name string
		copy func(dst string) error
	}{
		{"get-put", func(dst string) error {
			r, err := s.Get(ctx, "bench/src", 0, -1)
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = s.Put(ctx, dst, r)
			return err
		}},
		{"get", func(string) error { return s.drain(ctx, "bench/src") }},
		{"part-copy", func(dst string) error { return s.partCopy(ctx, "bench/src", dst, benchSize) }},
		{"part-copy+get", func(dst string) error {
			done := make(chan error, 1)
			go func() { done <- s.drain(ctx, "bench/src") }()
			return errors.Join(s.partCopy(ctx, "bench/src", dst, benchSize), <-done)
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			for i := range b.N {
				dst := fmt.Sprintf("bench/%s/%d", w.name, i)
				if err := w.copy(dst); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Delete(ctx, dst); err != nil && !errors.Is(err, storage.ErrNotExist) {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// drain reads key whole and hashes it, as meta's sha256 would need.
func (s *Store) drain(ctx context.Context, key string) error {
	r, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(sha256.New(), r)
	return err
}

// partCopy makes dst from src's first n bytes with one server-side part.
func (s *Store) partCopy(ctx context.Context, src, dst string, n int64) error {
	up, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + dst)})
	if err != nil {
		return err
	}
	part, err := s.client.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + dst), UploadId: up.UploadId, PartNumber: aws.Int32(1),
		CopySource:      aws.String(s.bucket + "/" + s.prefix + src),
		CopySourceRange: aws.String(fmt.Sprintf("bytes=0-%d", n-1))})
	if err != nil {
		return err
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + dst), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{
			{ETag: part.CopyPartResult.ETag, PartNumber: aws.Int32(1)}}}})
	return err
}
