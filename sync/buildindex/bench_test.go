package buildindex_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/catalogsync/catalogsync/sync/buildindex"
	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

const communityConfigs = "/work/shared/testdata/fbc/community-v4.21/configs"

var big struct{ dir, index string }

// bigCatalog generates the ~220 MB catalog (16 copies) and its pre-built
// index once per process.
func bigCatalog(b *testing.B) (dir, index string) {
	if big.dir != "" {
		return big.dir, big.index
	}
	if _, err := os.Stat(communityConfigs); err != nil {
		b.Skipf("community catalog absent: %v", err)
	}
	root, err := os.MkdirTemp("", "buildindex-bench-")
	if err != nil {
		b.Fatal(err)
	}
	dir = filepath.Join(root, "configs")
	if err := imagebuild.GenerateCopies(communityConfigs, dir, 16); err != nil {
		b.Fatal(err)
	}
	index = filepath.Join(root, "catalogsync-index")
	if _, err := buildindex.Build(context.Background(), dir, index); err != nil {
		b.Fatal(err)
	}
	big.dir, big.index = dir, index
	return dir, index
}

// BenchmarkFromFBC is the work a pre-built index could replace: parse and
// normalize every FBC file in walk order, then validate.
func BenchmarkFromFBC(b *testing.B) {
	dir, _ := bigCatalog(b)
	files, _, err := buildindex.Scan(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		v := fbc.NewValidator()
		var n int64
		for _, file := range files {
			f, err := os.Open(filepath.Join(dir, file.Content))
			if err != nil {
				b.Fatal(err)
			}
			err = fbc.Parse(bufio.NewReaderSize(f, 1<<20), func(o fbc.Object) error {
				v.Add(file.Path, o)
				n += int64(len(o.Blob))
				return nil
			})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := v.Validate(); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

// BenchmarkWithIndex is what reuse costs instead: hash the FBC (it must be
// read to prove the index belongs to it), check the index's checksums,
// validate the pre-built catalog.jsonl (kept: validity is not taken on
// trust) and read its objects for the store's index.
func BenchmarkWithIndex(b *testing.B) {
	dir, index := bigCatalog(b)
	b.ResetTimer()
	for b.Loop() {
		files, h, err := buildindex.Scan(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		d, err := h.Sum(files)
		if err != nil {
			b.Fatal(err)
		}
		x, err := buildindex.Open(index, d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Validate(); err != nil {
			b.Fatal(err)
		}
		var n int64
		if err := x.Objects(func(o buildindex.ObjectLine, line []byte) error { n += int64(len(line)); return nil }); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

// BenchmarkWithIndexParts splits the reuse cost, to show where it goes.
func BenchmarkWithIndexParts(b *testing.B) {
	dir, index := bigCatalog(b)
	files, h, err := buildindex.Scan(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	d, _ := h.Sum(files)
	b.Run("hashFBC", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := buildindex.Scan(context.Background(), dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	x, err := buildindex.Open(index, d)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verifyChecksums", func(b *testing.B) {
		for b.Loop() {
			if _, err := buildindex.Open(index, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validateJSONL", func(b *testing.B) {
		for b.Loop() {
			if _, err := x.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
