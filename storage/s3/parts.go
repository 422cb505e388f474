package s3

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/storage"
)

// Uploads are written here rather than with the SDK's transfer manager,
// which reads every part into a heap buffer from a pool it does not let
// callers replace. A sync keeps its heap under a soft memory limit (then
// 54 MiB), and (Concurrency+2) parts of 5 MiB in that heap made the GC run
// about 80 times instead of 30 for a 220 MB catalog: 0.8 s of CPU. Here a part is
// copied into a slot of an unlinked local file and sent from there; the
// page cache holds it, and a retried request re-reads it.

// maxParts is the most parts S3 accepts in one upload.
const maxParts = 10000

// crc32 is the checksum each request carries, as the SDK sends by default.
const crc32 = types.ChecksumAlgorithmCrc32

// putStream uploads r under full and returns its ETag and size: one
// PutObject when r ends within a part (a small one already in memory is
// sent from there), else a multipart upload.
func (s *Store) putStream(ctx context.Context, full string, r io.Reader, h storage.Headers) (string, int64, error) {
	if br, ok := r.(*bytes.Reader); ok && int64(br.Len()) < s.partSize {
		n := int64(br.Len())
		tag, err := s.putObject(ctx, full, br, n, h)
		return tag, n, err
	}
	f, err := s.scratch()
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	cr := &countingReader{ctx: ctx, r: r}
	buf := make([]byte, 256<<10)
	n, sum, err := s.fillSlot(f, 0, cr, s.partSize, buf)
	if err != nil {
		return "", 0, err
	}
	if n < s.partSize {
		tag, err := s.putScratch(ctx, full, io.NewSectionReader(f, 0, n), sum, h)
		return tag, n, err
	}
	created, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(full), ChecksumAlgorithm: crc32,
		ContentType: optional(h.ContentType), ContentEncoding: optional(h.ContentEncoding),
	})
	if err != nil {
		return "", 0, err
	}
	u := &upload{s: s, key: full, id: created.UploadId, f: f}
	tag, err := u.run(ctx, cr, buf, sum)
	if err != nil {
		u.abort(ctx, err)
		return "", 0, err
	}
	return tag, cr.n, nil
}

// putScratch is putObject of a body in the scratch file whose checksums
// were taken as it was written there.
func (s *Store) putScratch(ctx context.Context, full string, body *io.SectionReader, sum partSum, h storage.Headers) (string, error) {
	out, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(full),
		Body: body, ContentLength: aws.Int64(body.Size()), ChecksumAlgorithm: crc32, ChecksumCRC32: aws.String(sum.crc32),
		ContentType: optional(h.ContentType), ContentEncoding: optional(h.ContentEncoding),
	}, sum.options()...)
	if err != nil {
		return "", err
	}
	return etag(out.ETag), nil
}

func (s *Store) putObject(ctx context.Context, full string, body io.ReadSeeker, n int64, h storage.Headers) (string, error) {
	out, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(full),
		Body: body, ContentLength: aws.Int64(n), ChecksumAlgorithm: crc32,
		ContentType: optional(h.ContentType), ContentEncoding: optional(h.ContentEncoding),
	})
	if err != nil {
		return "", err
	}
	return etag(out.ETag), nil
}

// scratch opens an unlinked file for the parts of one upload, so that
// nothing of it stays behind whatever becomes of the process.
func (s *Store) scratch() (*os.File, error) {
	f, err := os.CreateTemp(s.tempDir, "catalogsync-parts-*")
	if err != nil {
		return nil, fmt.Errorf("scratch file for upload parts: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("scratch file for upload parts: %w", err)
	}
	return f, nil
}

// upload is one multipart upload under way. Its parts take turns in
// Concurrency+1 slots of PartSize bytes in f: one being filled from the
// stream while up to Concurrency are sent (a send waits for a turn).
type upload struct {
	s   *Store
	key string
	id  *string
	f   *os.File

	mu    sync.Mutex
	parts []types.CompletedPart
	err   error
}

// run sends the part already in slot 0 (its checksums sum) and the rest
// of r, then completes the upload.
func (u *upload) run(ctx context.Context, r io.Reader, buf []byte, sum partSum) (string, error) {
	slots := make(chan int64, u.s.concurrency+1)
	for i := 1; i <= u.s.concurrency; i++ {
		slots <- int64(i) * u.s.partSize
	}
	sends := make(chan struct{}, u.s.concurrency)
	var wg sync.WaitGroup
	off, n := int64(0), u.s.partSize
	for num := int32(1); n > 0 && u.failed() == nil; num++ {
		if num > u.s.maxParts {
			u.fail(fmt.Errorf("object over %d parts of %d bytes", u.s.maxParts, u.s.partSize))
			break
		}
		sends <- struct{}{}
		u.start(ctx, &wg, sends, slots, num, off, n, sum)
		if n < u.s.partSize {
			break
		}
		off = <-slots
		var err error
		if n, sum, err = u.s.fillSlot(u.f, off, r, u.s.partSize, buf); err != nil {
			u.fail(err)
		}
	}
	wg.Wait()
	if err := u.failed(); err != nil {
		return "", err
	}
	return u.complete(ctx)
}

// start sends part num from its slot, then gives back its turn and frees
// the slot.
func (u *upload) start(ctx context.Context, wg *sync.WaitGroup, sends <-chan struct{}, slots chan<- int64, num int32, off, n int64, sum partSum) {
	wg.Go(func() {
		defer func() { <-sends; slots <- off }()
		out, err := u.s.client.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket: aws.String(u.s.bucket), Key: aws.String(u.key), UploadId: u.id,
			PartNumber: aws.Int32(num), ChecksumAlgorithm: crc32, ChecksumCRC32: aws.String(sum.crc32),
			Body: io.NewSectionReader(u.f, off, n), ContentLength: aws.Int64(n),
		}, sum.options()...)
		if err != nil {
			u.fail(err)
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		u.parts = append(u.parts, types.CompletedPart{
			PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32,
		})
	})
}

func (u *upload) complete(ctx context.Context) (string, error) {
	slices.SortFunc(u.parts, func(a, b types.CompletedPart) int {
		return cmp.Compare(aws.ToInt32(a.PartNumber), aws.ToInt32(b.PartNumber))
	})
	out, err := u.s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: aws.String(u.s.bucket), Key: aws.String(u.key), UploadId: u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
	})
	if err != nil {
		return "", err
	}
	return etag(out.ETag), nil
}

// fail records the upload's first error. A cancellation gives way to a
// real error, which is usually its cause.
func (u *upload) fail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil || canceled(u.err) && !canceled(err) {
		u.err = err
	}
}

func (u *upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// abort removes the parts sent, with a context of its own so that a
// cancelled Put aborts too. After the upload failed (err) because the
// store stopped answering it is tried once: retries would only hold the
// Put's caller for more stall timeouts. When even that fails,
// AbortStaleUploads finds the upload later.
func (u *upload) abort(ctx context.Context, err error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	var opts []func(*awss3.Options)
	if errors.Is(err, stall.ErrStalled) {
		opts = append(opts, func(o *awss3.Options) { o.RetryMaxAttempts = 1 })
	}
	_, _ = u.s.client.AbortMultipartUpload(actx, &awss3.AbortMultipartUploadInput{
		Bucket: aws.String(u.s.bucket), Key: aws.String(u.key), UploadId: u.id,
	}, opts...)
}

// optional is nil for "", so an unset header is not sent at all.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return aws.String(v)
}
