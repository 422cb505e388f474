package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// refusingLayout refuses writes of the static layout's api/v1 objects
// while refuse is set, as a bucket policy could.
type refusingLayout struct {
	storage.Store
	refuse bool
}

func (r *refusingLayout) Copy(ctx context.Context, dst, src string, h storage.Headers) (storage.Info, error) {
	if r.refuse && strings.Contains(dst, "/api/v1/") {
		return storage.Info{}, storage.ErrDenied
	}
	return storage.Copy(ctx, r.Store, dst, src, h)
}

func readAllKey(t *testing.T, s storage.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With the layout on, each publish leaves api/v1/all holding the published
// catalog.jsonl. A store refusing the layout's writes fails the sync as a
// storage failure an operator must fix, with the pointer published and the
// earlier layout whole; once the store accepts them the next sync, up to
// date, repairs the layout.
func TestUnitStaticLayoutFollowsSyncs(t *testing.T) {
	t.Parallel()
	src, base := newFakeSource(), newStore(t)
	st := &refusingLayout{Store: base}
	pl := pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithStaticLayout(true))
	a := newImage(t, catalogLayer(t))
	b := newImage(t, tarLayer(t, entry{"configs/other.json", `{"schema":"custom.thing","name":"x"}`}))
	src.tag("reg/c:v1", a)
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all, _ := catalog.StaticKeys("c")
	first := readAllKey(t, base, all)
	c, err := catalog.Open(ctx, base, "c")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := c.All(ctx)
	want, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(first, want) || len(want) == 0 {
		t.Fatalf("api/v1/all has %d bytes, the catalog %d", len(first), len(want))
	}

	st.refuse = true
	src.tag("reg/c:v1", b)
	_, err = runOnce(t, pl, "c", "reg/c:v1")
	se, ok := pipeline.AsError(err)
	if !ok || se.Reason != pipeline.ReasonStorage || se.Retryable || !errors.Is(err, storage.ErrDenied) || !strings.Contains(err.Error(), "static layout") {
		t.Fatalf("sync with the layout refused: %v", err)
	}
	if p, _, err := catalog.Current(ctx, base, "c"); err != nil || p.Digest != b.digest {
		t.Fatalf("pointer %s, %v; want it published", p.Digest, err)
	}
	if got := readAllKey(t, base, all); !bytes.Equal(got, first) {
		t.Fatal("a refused layout write changed api/v1/all")
	}

	st.refuse = false
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil || res.Action != pipeline.ActionUpToDate {
		t.Fatalf("next sync: %+v, %v", res, err)
	}
	if s, err := catalog.ReadStatic(ctx, base, "c"); err != nil || s.Digest != b.digest {
		t.Fatalf("static state %+v, %v", s, err)
	}
	if got := readAllKey(t, base, all); bytes.Equal(got, first) {
		t.Fatal("the up-to-date sync did not repair api/v1/all")
	}
}
