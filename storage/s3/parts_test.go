package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Every size around the part boundaries goes up whole, as one PutObject
// below a part and as ceil(size/part) parts from there, with one part or
// three at a time; a stream and a bytes.Reader alike.
func TestPutPartBoundaries(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	const part = 5 << 20
	for _, conc := range []int{1, 3} {
		cfg := minioConfig(m, bucket)
		cfg.Endpoint, cfg.PartSize, cfg.Concurrency, cfg.TempDir = proxy.URL, part, conc, t.TempDir()
		s := newTestStore(t, cfg)
		ctx := testCtx(t)
		for _, size := range []int64{0, 1, part - 1, part, part + 1, 2 * part, 3*part + 7} {
			for _, asBytes := range []bool{false, true} {
				name := fmt.Sprintf("c%d/%d/bytes=%v", conc, size, asBytes)
				var r io.Reader = &noiseReader{n: size}
				if asBytes {
					b, _ := io.ReadAll(r)
					r = bytes.NewReader(b)
				}
				proxy.ResetCounts()
				in, err := s.Put(ctx, name, r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if in.Size != size || in.ETag == "" {
					t.Fatalf("%s: Info %+v", name, in)
				}
				checkStored(t, s, name, size)
				parts, puts := 0, 1
				if size >= part {
					parts, puts = int((size+part-1)/part), 0
				}
				if got := proxy.Count(classUploadPart); got != parts || proxy.Count(classPut) != puts {
					t.Fatalf("%s: %d parts and %d PutObject, want %d and %d", name, got, proxy.Count(classPut), parts, puts)
				}
			}
		}
		if left, _ := os.ReadDir(cfg.TempDir); len(left) != 0 {
			t.Fatalf("scratch files left: %v", left)
		}
	}
}

// checkStored reads key back and compares it with noiseReader's bytes.
func checkStored(t *testing.T, s *Store, key string, size int64) {
	t.Helper()
	rc, err := s.Get(testCtx(t), key, 0, -1)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	defer rc.Close()
	got, want := sha256.New(), sha256.New()
	if _, err := io.Copy(got, rc); err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	io.Copy(want, &noiseReader{n: size})
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("%s: stored bytes differ from those put", key)
	}
}

// A part whose request fails (an error status, a reset connection) is
// sent again from its slot of the scratch file, and the object is whole.
func TestPutRetriesPartFromScratch(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint, cfg.PartSize = proxy.URL, 5<<20
	s := newTestStore(t, cfg)
	proxy.Inject(servers.Status(http.StatusInternalServerError), 1, classUploadPart)
	proxy.Inject(servers.ResetAfter(-1), 1, classUploadPart)
	const size = 17 << 20
	if _, err := s.Put(testCtx(t), "retried", &noiseReader{n: size}); err != nil {
		t.Fatal(err)
	}
	if got := proxy.Count(classUploadPart); got != 6 {
		t.Fatalf("%d UploadPart requests, want 4 parts and 2 retries", got)
	}
	checkStored(t, s, "retried", size)
}

// The scratch file is unlinked as soon as it is made: while a Put streams
// nothing of it is in TempDir to be left behind. A TempDir that cannot be
// written fails the Put before any upload begins.
func TestPutScratchIsUnlinked(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint, cfg.TempDir = proxy.URL, t.TempDir()
	s := newTestStore(t, cfg)
	var seen []os.DirEntry
	look := &peekReader{r: &noiseReader{n: 12 << 20}, at: 7 << 20, peek: func() {
		seen, _ = os.ReadDir(cfg.TempDir)
	}}
	if _, err := s.Put(testCtx(t), "peeked", look); err != nil {
		t.Fatal(err)
	}
	if !look.done || len(seen) != 0 {
		t.Fatalf("mid-upload (peeked: %v) the temp dir held %v", look.done, seen)
	}

	cfg.TempDir = cfg.TempDir + "/missing"
	s = newTestStore(t, cfg)
	proxy.ResetCounts()
	_, err := s.Put(testCtx(t), "nowhere", &noiseReader{n: 1})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Put with a missing temp dir = %v", err)
	}
	if n := len(proxy.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// peekReader calls peek once its reader has yielded at bytes.
type peekReader struct {
	r     io.Reader
	at, n int64
	peek  func()
	done  bool
}

func (p *peekReader) Read(b []byte) (int, error) {
	if !p.done && p.n >= p.at {
		p.peek()
		p.done = true
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

// noiseReader yields n bytes of a cheap pattern that never repeats a
// part's worth, so a part sent from the wrong slot shows.
type noiseReader struct{ n, off int64 }

func (r *noiseReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), r.n-r.off))
	for i := range k {
		x := uint64(r.off+int64(i)) >> 3 * 0x9e3779b97f4a7c15
		x ^= x >> 31
		p[i] = byte(x >> (8 * ((r.off + int64(i)) & 7)))
	}
	r.off += int64(k)
	return k, nil
}

// Parts that finish out of order (the first held back at the proxy while
// the others go through) are completed in part order, with their
// checksums.
func TestPutPartsCompleteInOrder(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint, cfg.PartSize, cfg.Concurrency = proxy.URL, 5<<20, 3
	s := newTestStore(t, cfg)
	proxy.Inject(servers.Delay(time.Second), 1, classUploadPart)
	const size = 16 << 20
	if _, err := s.Put(testCtx(t), "reordered", &noiseReader{n: size}); err != nil {
		t.Fatal(err)
	}
	checkStored(t, s, "reordered", size)
}

// No more than Concurrency parts are ever sent at once: each is held at
// the proxy a while, so that more would overlap if allowed.
func TestPutSendsAtMostConcurrencyParts(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	var mu sync.Mutex
	inFlight, most := 0, 0
	proxy.Inject(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		servers.Delay(200*time.Millisecond)(w, r, next)
	}, 0, classUploadPart)
	for _, conc := range []int{1, 2} {
		cfg := minioConfig(m, newBucket(t, m))
		cfg.Endpoint, cfg.PartSize, cfg.Concurrency = proxy.URL, 5<<20, conc
		s := newTestStore(t, cfg)
		mu.Lock()
		most = 0
		mu.Unlock()
		const size = 21 << 20
		if _, err := s.Put(testCtx(t), "bounded", &noiseReader{n: size}); err != nil {
			t.Fatal(err)
		}
		checkStored(t, s, "bounded", size)
		mu.Lock()
		got := most
		mu.Unlock()
		if got > conc {
			t.Fatalf("concurrency %d: %d parts sent at once", conc, got)
		}
	}
}

// An object needing more parts than S3 accepts fails without sending the
// part over the bound, and its upload is aborted; one that fills
// the last part exactly goes up. (S3's bound, 10,000 parts, is lowered to
// two: at the smallest part size it is 48.8 GiB.)
func TestPutStopsAtMaxParts(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	const part = 5 << 20
	cfg := minioConfig(m, bucket)
	cfg.Endpoint, cfg.PartSize = proxy.URL, part
	s := newTestStore(t, cfg)
	s.maxParts = 2
	ctx := testCtx(t)

	if _, err := s.Put(ctx, "exact", &noiseReader{n: 2 * part}); err != nil {
		t.Fatalf("Put of exactly two parts: %v", err)
	}
	checkStored(t, s, "exact", 2*part)

	proxy.ResetCounts()
	_, err := s.Put(ctx, "over", &noiseReader{n: 2*part + 1})
	if err == nil || !strings.Contains(err.Error(), "over 2 parts") {
		t.Fatalf("Put of two parts and a byte = %v, want the part bound", err)
	}
	if n, a := proxy.Count(classUploadPart), proxy.Count(classAbortUpload); n != 2 || a != 1 {
		t.Fatalf("%d parts sent, %d uploads aborted; want 2 and 1", n, a)
	}
	if left := pendingUploads(t, m, bucket, "over"); len(left) != 0 {
		t.Fatalf("uploads left behind: %q", left)
	}
	if _, err := s.Stat(ctx, "over"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Stat(over) = %v", err)
	}
}

// An upload keeps its first real error: a cancellation (which the real
// error often causes) gives way to it, whichever comes first.
func TestUploadKeepsTheRealError(t *testing.T) {
	real1, real2 := errors.New("part 3: 500"), errors.New("part 4: reset")
	canceled := fmt.Errorf("put: %w", context.Canceled)
	deadline := fmt.Errorf("put: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name string
		errs []error
		want error
	}{
		{"one", []error{real1}, real1},
		{"first real wins", []error{real1, real2}, real1},
		{"real after a cancellation", []error{canceled, real1}, real1},
		{"real after a deadline", []error{deadline, real1, real2}, real1},
		{"cancellation after real", []error{real1, canceled}, real1},
		{"cancellations only", []error{canceled, deadline}, canceled},
	} {
		var u upload
		for _, err := range tc.errs {
			u.fail(err)
		}
		if got := u.failed(); got != tc.want {
			t.Errorf("%s: failed() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A store that hangs mid-upload fails the Put with ErrStalled once the
// parts' tries are spent, and the abort that follows is tried once, not
// again and again against a store that does not answer (AbortStaleUploads
// finds the upload later): the sync waiting on the Put learns of the
// outage after one more stall timeout, not after the SDK's retries.
func TestPutOnHungStoreAbortsOnce(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint, cfg.PartSize, cfg.StallTimeout = proxy.URL, 5<<20, 300*time.Millisecond
	s := newTestStore(t, cfg)
	proxy.Inject(servers.StallAfter(-1), 0, classUploadPart, classAbortUpload, classComplete)
	_, err := s.Put(testCtx(t), "hung", &noiseReader{n: 12 << 20})
	if !errors.Is(err, stall.ErrStalled) {
		t.Fatalf("Put on a hung store: %v, want ErrStalled", err)
	}
	if got := proxy.Count(classAbortUpload); got != 1 {
		t.Fatalf("%d AbortMultipartUpload requests, want 1", got)
	}
}
