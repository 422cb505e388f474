package catalog

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// failingIndex fails reads of index objects partway with a store error.
type failingIndex struct{ storage.Store }

func (f failingIndex) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := f.Store.Get(ctx, key, off, n)
	if err != nil || !strings.HasSuffix(key, "/"+indexFile) {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, 8), iotest.ErrReader(errStoreRead)), rc}, nil
}

var errStoreRead = errors.New("connection reset by peer")

// An index the store fails to deliver is that failure (retry), not
// corrupt content (which would be written again).
func TestIndexReadFailureIsNotCorrupt(t *testing.T) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	writeCatalog(t, st, "c", digest, []obj{{"olm.package", "", "p", []byte(`{"schema":"olm.package","name":"p"}` + "\n")}})
	_, err = OpenDigest(context.Background(), failingIndex{st}, "c", digest)
	if !errors.Is(err, errStoreRead) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("%v, want the store's read error, not corrupt content", err)
	}
}
