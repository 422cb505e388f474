package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
)

// commitWithFiles writes a small catalog of name at digest with the given
// per-file summary (nil: none) and returns the meta HasContent reads back.
func commitWithFiles(t *testing.T, s storage.Store, name, digest string, files []byte) Meta {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(ctx, s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, n := range []string{"a", "b", "c"} {
		line := []byte(`{"schema":"olm.bundle","package":"p","name":"` + n + `"}` + "\n")
		if err := w.Add("olm.bundle", "p", n, line); err != nil {
			t.Fatal(err)
		}
	}
	w.SetFiles(sectionOf(files))
	if _, err := w.Commit(ctx, Meta{}); err != nil {
		t.Fatal(err)
	}
	m, ok, err := HasContent(ctx, s, name, digest)
	if err != nil || !ok {
		t.Fatalf("HasContent = %v, %v", ok, err)
	}
	return m
}

// A stored summary reads back whole through OpenFiles, and its size is in
// meta.json. Catches putFiles dropping or failing a normal summary and
// OpenFiles refusing a valid meta (checks of name, digest or size inverted).
func TestFilesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files")
	summary := []byte("per-file facts")
	m := commitWithFiles(t, s, "f", d, summary)
	if m.FilesSize != int64(len(summary)) {
		t.Fatalf("FilesSize %d, want %d", m.FilesSize, len(summary))
	}
	rc, err := OpenFiles(ctx, s, m)
	if err != nil {
		t.Fatalf("OpenFiles: %v", err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err != nil || !bytes.Equal(b, summary) {
		t.Fatalf("read %q, %v; want %q", b, err, summary)
	}
	for _, bad := range []struct {
		m    Meta
		want error
	}{
		{Meta{Name: "../f", Digest: d, FilesSize: m.FilesSize}, ErrInvalidName},
		{Meta{Name: "f", Digest: "sha256:x", FilesSize: m.FilesSize}, ErrInvalidDigest},
	} {
		if rc, err := OpenFiles(ctx, s, bad.m); !errors.Is(err, bad.want) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("OpenFiles(%q, %q): %v, want %v", bad.m.Name, bad.m.Digest, err, bad.want)
		}
	}
}

// A store failure writing the summary fails Commit and leaves the content
// incomplete. Catches the Put error check of putFiles inverted.
func TestFilesWriteFailure(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files-fail")
	w, err := NewWriter(ctx, &faultyStore{Store: s, suffix: "/" + filesFile}, "f", d)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Add("olm.bundle", "p", "a", []byte(`{"schema":"olm.bundle","package":"p","name":"a"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	w.SetFiles(sectionOf([]byte("facts")))
	if _, err := w.Commit(ctx, Meta{}); !errors.Is(err, errInjected) {
		t.Fatalf("Commit: %v, want the store's failure", err)
	}
	if _, ok, err := HasContent(ctx, s, "f", d); err != nil || ok {
		t.Fatalf("content complete (%v, %v) without its summary", ok, err)
	}
}

// A meta.json whose summary size is none (0), negative or past
// MaxFilesSize has no summary, even where a summary object is stored (left
// by an earlier writer of the digest, or a meta.json damaged by hand).
// Catches OpenFiles' size bounds loosened (<= 0 to < 0, || to &&), which
// would hand out that object, or all of it for a negative size.
func TestFilesNoneWhenMetaSaysNone(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files-stale")
	m := commitWithFiles(t, s, "f", d, []byte("old facts"))
	if err := s.Delete(ctx, contentPrefix("f", d)+metaFile); err != nil { // as GC's first step
		t.Fatal(err)
	}
	m = commitWithFiles(t, s, "f", d, nil) // written again, without a summary
	if m.FilesSize != 0 {
		t.Fatalf("FilesSize %d without a summary", m.FilesSize)
	}
	for _, size := range []int64{0, -1, MaxFilesSize + 1} {
		m.FilesSize = size
		rc, err := OpenFiles(ctx, s, m)
		if err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("FilesSize %d: read %q, want no summary", size, b)
		} else if !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("FilesSize %d: %v, want ErrNotExist", size, err)
		}
	}
}

// bigFilesStore keeps summary objects as their length alone and serves
// them as zeros, so a summary of MaxFilesSize bytes costs no disk.
type bigFilesStore struct {
	storage.Store
	mu   sync.Mutex
	size map[string]int64
}

func (b *bigFilesStore) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if !strings.HasSuffix(key, "/"+filesFile) {
		return b.Store.Put(ctx, key, r)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return storage.Info{}, err
	}
	b.mu.Lock()
	b.size[key] = n
	b.mu.Unlock()
	return storage.Info{Key: key, Size: n}, nil
}

func (b *bigFilesStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b.mu.Lock()
	size, ok := b.size[key]
	b.mu.Unlock()
	if !strings.HasSuffix(key, "/"+filesFile) {
		return b.Store.Get(ctx, key, off, n)
	}
	if !ok {
		return nil, storage.ErrNotExist
	}
	left := size - min(off, size)
	if n >= 0 {
		left = min(left, n)
	}
	return io.NopCloser(io.LimitReader(zeros{}, left)), nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A summary of exactly MaxFilesSize bytes is stored and read back whole;
// one byte more is not stored and the content is complete without it.
// Catches either bound moved by one (> to >= in putFiles or OpenFiles).
func TestFilesSizeBound(t *testing.T) {
	ctx := context.Background()
	s := &bigFilesStore{Store: newStore(t), size: map[string]int64{}}
	// One buffer for both sizes, never written: clearing 256 MiB of heap
	// took longer than the rest of the package's tests together.
	buf := zeroBytes(t, MaxFilesSize+1)
	for _, size := range []int{MaxFilesSize, MaxFilesSize + 1} {
		d := digestOf(size)
		m := commitWithFiles(t, s, "f", d, buf[:size])
		if size > MaxFilesSize {
			if m.FilesSize != 0 {
				t.Fatalf("summary of %d bytes stored (FilesSize %d)", size, m.FilesSize)
			}
			if _, err := OpenFiles(ctx, s, m); !errors.Is(err, storage.ErrNotExist) {
				t.Fatalf("summary of %d bytes: %v, want none", size, err)
			}
			continue
		}
		if m.FilesSize != int64(size) {
			t.Fatalf("summary of %d bytes: FilesSize %d", size, m.FilesSize)
		}
		rc, err := OpenFiles(ctx, s, m)
		if err != nil {
			t.Fatalf("summary of %d bytes: %v", size, err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != int64(size) {
			t.Fatalf("summary of %d bytes: read %d, %v", size, n, err)
		}
	}
}

// OpenLines serves every range within catalog.jsonl, empty ones at either
// end included, byte for byte, and refuses every range reaching outside
// it (a negative length would read to the end). Catches each bound of
// OpenLines moved by one, inverted, joined with the wrong operator, or
// Size-off turned into Size+off, and the name and digest checks inverted.
func TestOpenLinesRanges(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("lines")
	m := commitWithFiles(t, s, "l", d, nil)
	rc, err := s.Get(ctx, contentPrefix("l", d)+contentFile, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || int64(len(whole)) != m.Size || m.Size < 2 {
		t.Fatalf("catalog.jsonl: %d bytes (%v), meta says %d", len(whole), err, m.Size)
	}
	S := m.Size
	for _, r := range [][2]int64{{0, S}, {0, 0}, {S, 0}, {1, S - 1}, {S - 1, 1}, {1, 0}} {
		rc, err := OpenLines(ctx, s, m, r[0], r[1])
		if err != nil {
			t.Errorf("range %d+%d of %d: %v", r[0], r[1], S, err)
			continue
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if want := whole[r[0] : r[0]+r[1]]; err != nil || !bytes.Equal(b, want) {
			t.Errorf("range %d+%d: read %q, %v; want %q", r[0], r[1], b, err, want)
		}
	}
	for _, r := range [][2]int64{{-1, 1}, {-1, 0}, {0, -1}, {S, -1}, {S + 1, 0}, {1, S}, {0, S + 1}, {S, 1}} {
		if rc, err := OpenLines(ctx, s, m, r[0], r[1]); !errors.Is(err, ErrCorrupt) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("range %d+%d of %d: %v, want ErrCorrupt", r[0], r[1], S, err)
		}
	}
	for _, bad := range []struct {
		m    Meta
		want error
	}{
		{Meta{Name: "L", Digest: d, Size: S}, ErrInvalidName},
		{Meta{Name: "l", Digest: "md5:00", Size: S}, ErrInvalidDigest},
	} {
		if rc, err := OpenLines(ctx, s, bad.m, 0, 1); !errors.Is(err, bad.want) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("OpenLines(%q, %q): %v, want %v", bad.m.Name, bad.m.Digest, err, bad.want)
		}
	}
}

// sectionOf is b as SetFiles takes it; nil for nil (no summary).
func sectionOf(b []byte) *io.SectionReader {
	if b == nil {
		return nil
	}
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}
