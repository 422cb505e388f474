package pipeline

import (
	"fmt"
	"testing"

	"github.com/catalogsync/catalogsync/sync/unpack"
)

// recordsFixture is n files whose records lie in a spool, every third one
// reused and every fifth one still holding its parse, as validation finds
// them while the streamer writes the last files.
func recordsFixture(t *testing.T, n int) ([]unpack.File, map[string]*fileResult) {
	t.Helper()
	sp, err := newSpool(t.TempDir(), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.remove)
	files, results := make([]unpack.File, n), map[string]*fileResult{}
	for i := range files {
		name := fmt.Sprintf("f%03d.yaml", i)
		files[i] = unpack.File{Path: name, Content: name}
		fr := &fileResult{}
		switch {
		case i%3 == 0:
			fr.reused = &fileFacts{}
		case i%5 == 0:
			fr.objs = []objRec{{n: i}}
		default:
			rec := appendFacts(nil, &fileFacts{Len: int64(i), Objects: []objFact{{Name: name, N: int64(i)}}})
			off, err := sp.append(rec)
			if err != nil {
				t.Fatal(err)
			}
			fr.written = &factsAt{sp: sp, off: off, n: len(rec)}
		}
		results[name] = fr
	}
	return files, results
}

// TestRecordsInCatalogOrder: the records decoded ahead come back each
// with its own file, in order, past the few files decoders may run
// ahead, whatever mix of reused, parsed and written files.
func TestRecordsInCatalogOrder(t *testing.T) {
	files, results := recordsFixture(t, 100)
	r := readRecords(files, results)
	defer r.stop()
	for i, file := range files {
		objs, f, err := r.get(i)
		if err != nil {
			t.Fatal(err)
		}
		fr := results[file.Content]
		switch {
		case fr.reused != nil:
			if objs != nil || f != nil {
				t.Fatalf("file %d is reused, got objects %v, facts %v", i, objs, f)
			}
		case fr.written == nil:
			if len(objs) != 1 || objs[0].n != i || f != nil {
				t.Fatalf("file %d: got objects %v, facts %v; want its parse", i, objs, f)
			}
		default:
			if f == nil || len(f.Objects) != 1 || f.Objects[0].Name != file.Path {
				t.Fatalf("file %d: got facts %+v, want those of %s", i, f, file.Path)
			}
		}
	}
}

// TestRecordsStopEarly: validation that stops at a file (an invalid one)
// ends the decoders, which are then waiting for it to take more.
func TestRecordsStopEarly(t *testing.T) {
	files, results := recordsFixture(t, 100)
	r := readRecords(files, results)
	if _, _, err := r.get(0); err != nil {
		t.Fatal(err)
	}
	r.stop() // a deadlock here fails the test binary's timeout
}
