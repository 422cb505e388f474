package storagetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
)

// PutHeaders stores the bytes as Put does, whether the store keeps the
// headers or not (the backends' own tests read them back over HTTP).
func testPutHeaders(t *testing.T, s storage.Store) {
	data := randBytes(21, 5<<20+7) // over one S3 part: a multipart upload
	h := storage.Headers{ContentType: "application/jsonl", ContentEncoding: "gzip"}
	for _, key := range []string{"hdr/small", "hdr/large"} {
		b := data
		if key == "hdr/small" {
			b = data[:100]
		}
		in, err := storage.PutHeaders(ctx(t), s, key, bytes.NewReader(b), h)
		if err != nil {
			t.Fatalf("PutHeaders(%s): %v", key, err)
		}
		if got := get(t, s, key, 0, -1); !bytes.Equal(got, b) || in.Size != int64(len(b)) {
			t.Errorf("PutHeaders(%s) = %+v; read back %d bytes, want %d", key, in, len(got), len(b))
		}
	}
}

// Copy replaces dst with src's bytes, leaves src alone, is unaffected by
// later writes to src, refuses a missing src leaving dst as it was, and
// refuses invalid keys.
func testCopy(t *testing.T, s storage.Store) {
	checkCopy(t, s)
}

// The streaming fallback of storage.Copy (a store that is no Copier, or
// an object too large for its copy) keeps the same promises.
func testCopyStreamed(t *testing.T, s storage.Store) {
	checkCopy(t, struct{ storage.Store }{s})
}

func checkCopy(t *testing.T, s storage.Store) {
	t.Helper()
	h := storage.Headers{ContentType: "application/jsonl"}
	src := randBytes(31, 3000)
	put(t, s, "cp/src", src)
	old := put(t, s, "cp/dir/dst", []byte("old"))
	in, err := storage.Copy(ctx(t), s, "cp/dir/dst", "cp/src", h)
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if got := get(t, s, "cp/dir/dst", 0, -1); !bytes.Equal(got, src) {
		t.Fatalf("after Copy dst has %d bytes, want the %d of src", len(got), len(src))
	}
	st := stat(t, s, "cp/dir/dst")
	if in.Key != "cp/dir/dst" || in.Size != int64(len(src)) || st.Size != in.Size || st.ETag == old.ETag || in.ETag != st.ETag {
		t.Errorf("Copy = %+v, Stat %+v, old %+v", in, st, old)
	}
	// A new key, in a directory that does not exist yet.
	if _, err := storage.Copy(ctx(t), s, "cp/new/deep/dst", "cp/src", h); err != nil {
		t.Fatalf("Copy to a new key: %v", err)
	}
	put(t, s, "cp/src", []byte("replaced"))
	if got := get(t, s, "cp/dir/dst", 0, -1); !bytes.Equal(got, src) {
		t.Errorf("replacing src changed its copy: %q", got[:min(len(got), 20)])
	}
	if got := get(t, s, "cp/src", 0, -1); string(got) != "replaced" {
		t.Errorf("src = %q", got)
	}
	if _, err := storage.Copy(ctx(t), s, "cp/dir/dst", "cp/missing", h); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Copy of a missing src: %v", err)
	}
	if got := get(t, s, "cp/dir/dst", 0, -1); !bytes.Equal(got, src) {
		t.Errorf("a failed Copy changed dst")
	}
	for _, bad := range []string{"../x", "/abs", "cp/../x", ""} {
		if _, err := storage.Copy(ctx(t), s, bad, "cp/src", h); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Copy to %q: %v", bad, err)
		}
		if _, err := storage.Copy(ctx(t), s, "cp/x", bad, h); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Copy from %q: %v", bad, err)
		}
	}
}
