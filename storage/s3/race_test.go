package s3_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/servers"
)

// writeCatalog stores a catalog of about size bytes for digest through the
// catalog Writer, with content unique to seed.
func writeCatalog(ctx context.Context, s *s3.Store, name, digest string, seed, size int) (catalog.Meta, error) {
	w, err := catalog.NewWriter(ctx, s, name, digest)
	if err != nil {
		return catalog.Meta{}, err
	}
	defer w.Abort()
	pad := strings.Repeat(fmt.Sprintf("%x", seed), 40)
	for i := 0; i*(len(pad)+80) < size; i++ {
		line := fmt.Appendf(nil, `{"schema":"olm.bundle","package":"p%d","name":"b%d","pad":%q}`+"\n", i%50, i, pad)
		if err := w.Add("olm.bundle", fmt.Sprintf("p%d", i%50), fmt.Sprintf("b%d", i), line); err != nil {
			return catalog.Meta{}, err
		}
	}
	return w.Commit(ctx, catalog.Meta{Ref: "example.com/race:latest"})
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Publishers racing on one catalog converge on the newest resolution;
// readers racing with them always read a complete catalog; GC afterwards
// leaves exactly what its policy keeps, and no upload behind.
func TestConcurrentPublishersAndReaders(t *testing.T) {
	// A MinIO of its own: the package's other objects in a shared one slow
	// its listings, and this test is the package's longest.
	m := servers.StartMinIO(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bucket := m.NewBucket(t)
	s, err := s3.New(ctx, s3.Config{
		Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey, PartSize: 5 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	const (
		name       = "race"
		publishers = 4
		size       = 7 << 20 // more than a part: multipart uploads race too
	)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	first := digestOf("initial")
	if _, err := writeCatalog(ctx, s, name, first, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(ctx, s, name, catalog.Pointer{Digest: first, Ref: "example.com/race:latest", ResolvedAt: base}); err != nil {
		t.Fatal(err)
	}

	var all []string // every digest ever written
	all = append(all, first)
	for round := range 3 {
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			digests = make([]string, publishers)
			metas   = make([]catalog.Meta, publishers)
			errs    = make([]error, publishers)
		)
		for i := range publishers {
			digests[i] = digestOf(fmt.Sprintf("round %d publisher %d", round, i))
			wg.Go(func() {
				<-start
				seed := round*publishers + i + 1
				metas[i], errs[i] = writeCatalog(ctx, s, name, digests[i], seed, size)
				if errs[i] != nil {
					return
				}
				// Publisher i resolved its tag at base+round+i: the
				// highest i is the newest resolution whatever order the
				// swaps land in.
				errs[i] = catalog.Publish(ctx, s, name, catalog.Pointer{
					Digest: digests[i], Ref: "example.com/race:latest",
					ResolvedAt: base.Add(time.Duration(round*publishers+i+1) * time.Minute),
				})
			})
		}
		all = append(all, digests...)

		// Readers run from before the writers start until after the
		// last swap, and check every read against its meta.
		var (
			rwg      sync.WaitGroup
			stop     = make(chan struct{})
			reads    atomic.Int64
			readErr  atomic.Value
			seenMu   sync.Mutex
			seenDigs = map[string]bool{}
		)
		for r := range 4 {
			rwg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					dig, err := readWhole(ctx, s, name)
					if err != nil {
						readErr.CompareAndSwap(nil, fmt.Errorf("reader %d: %w", r, err))
						return
					}
					reads.Add(1)
					seenMu.Lock()
					seenDigs[dig] = true
					seenMu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		// A few more reads of the final state.
		for n := reads.Load(); reads.Load() < n+8 && readErr.Load() == nil; {
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		rwg.Wait()
		if err, _ := readErr.Load().(error); err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, catalog.ErrStale) {
				t.Fatalf("round %d publisher %d: %v", round, i, err)
			}
		}
		if errs[publishers-1] != nil {
			t.Fatalf("round %d: the newest resolution was refused: %v", round, errs[publishers-1])
		}
		ptr, _, err := catalog.Current(ctx, s, name)
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Digest != digests[publishers-1] {
			t.Fatalf("round %d: pointer on %s, want the newest resolution %s", round, ptr.Digest, digests[publishers-1])
		}
		t.Logf("round %d: %d complete reads of %d digests while publishing", round, reads.Load(), len(seenDigs))
		if reads.Load() < 10 {
			t.Fatalf("round %d: only %d reads raced the publishers", round, reads.Load())
		}

		// GC: current plus the two newest other complete digests stay.
		rep, err := catalog.GC(ctx, s, catalog.GCOptions{Keep: 2, Grace: -1, LeftoverAge: -1})
		if err != nil {
			t.Fatal(err)
		}
		type dated struct {
			digest  string
			created time.Time
		}
		var others []dated
		for _, d := range all {
			if d == ptr.Digest {
				continue
			}
			if mt, ok, err := catalog.HasContent(ctx, s, name, d); err != nil {
				t.Fatal(err)
			} else if ok {
				others = append(others, dated{d, mt.Created})
			}
		}
		if len(others) != 2 {
			t.Fatalf("round %d: %d non-current digests left, want 2; deleted %d items", round, len(others), len(rep.Deleted))
		}
		// Nothing else under the catalog: no incomplete content, no
		// orphan object, no pending upload.
		list, err := s.List(ctx, "catalogs/"+name+"/")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"catalogs/" + name + "/current"}
		for _, d := range append([]string{ptr.Digest}, others[0].digest, others[1].digest) {
			dir := "catalogs/" + name + "/" + strings.Replace(d, ":", "-", 1) + "/"
			want = append(want, dir+"catalog.jsonl", dir+"graphql-schema.json", dir+"index", dir+"meta.json")
		}
		var got []string
		for _, in := range list {
			got = append(got, in.Key)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: store holds\n%q\nwant\n%q", round, got, want)
		}
		var keys []string
		for _, d := range all {
			dir := "catalogs/" + name + "/" + strings.Replace(d, ":", "-", 1) + "/"
			keys = append(keys, dir+"catalog.jsonl", dir+"index")
		}
		if ups, err := s.StaleUploads(ctx, "", -1, keys...); err != nil || len(ups) != 0 {
			t.Fatalf("round %d: uploads left: %v %v", round, ups, err)
		}
		// The newest of the others is at least as new as every
		// deleted one: recency decided.
		for _, it := range rep.Deleted {
			for _, o := range others {
				if it.Created.After(o.created) {
					t.Errorf("round %d: deleted %s created %v, kept %s created %v", round, it.Digest, it.Created, o.digest, o.created)
				}
			}
		}
	}
}

// readWhole opens the published catalog, reads all of it and checks it
// against its meta; it returns the digest read.
func readWhole(ctx context.Context, s *s3.Store, name string) (string, error) {
	c, err := catalog.Open(ctx, s, name)
	if err != nil {
		return "", err
	}
	rc, err := c.All(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return "", err
	}
	if n != c.Meta.Size || hex.EncodeToString(h.Sum(nil)) != c.Meta.SHA256 {
		return "", fmt.Errorf("%s: read %d bytes, sha256 %x; meta says %d bytes, %s", c.Pointer.Digest, n, h.Sum(nil), c.Meta.Size, c.Meta.SHA256)
	}
	return c.Pointer.Digest, nil
}
