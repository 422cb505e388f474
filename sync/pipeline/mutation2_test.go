package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// A pointer at the resolved digest whose content lost its meta.json (an
// interrupted GC, a hand-made delete) is not up to date: the sync pulls
// and publishes again instead of reporting an empty catalog as current.
func TestUnitIncompleteContentIsNotUpToDate(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, in := range infos {
		if strings.HasSuffix(in.Key, "/meta.json") {
			if err := st.Delete(ctx, in.Key); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d meta.json, want 1", deleted)
	}
	_, opens := src.counts()
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if _, o := src.counts(); err != nil || res.Action != pipeline.ActionPublished || res.Meta.Objects != 3 || o == opens {
		t.Fatalf("after losing meta.json: %+v %v (opens %d, before %d); want pulled and published again", res, err, o, opens)
	}
}

// pollFails is a store whose writes of the last-poll record fail.
type pollFails struct{ storage.Store }

func (s pollFails) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if strings.HasSuffix(key, "/lastpoll") {
		return storage.Info{}, errors.New("disk full")
	}
	return s.Store.Put(ctx, key, r)
}

// Recording the poll is best effort: a failure is logged and the sync
// still succeeds; a success logs nothing.
func TestUnitRecordPollWarnsOnlyOnFailure(t *testing.T) {
	t.Parallel()
	for _, failing := range []bool{false, true} {
		var logs bytes.Buffer
		src, st := newFakeSource(), newStore(t)
		if failing {
			st = pollFails{st}
		}
		pl := pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()),
			pipeline.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
		for _, want := range []pipeline.Action{pipeline.ActionPublished, pipeline.ActionUpToDate} {
			if res, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil || res.Action != want {
				t.Fatalf("failing poll record %v: %+v, %v; want %s", failing, res, err, want)
			}
		}
		if warned := strings.Count(logs.String(), `msg="record poll"`); warned != map[bool]int{false: 0, true: 2}[failing] {
			t.Errorf("failing poll record %v: %d warnings:\n%s", failing, warned, logs.String())
		}
	}
}
