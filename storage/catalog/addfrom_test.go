package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestAddShapedFromSameAsAdd: lines streamed a chunk at a time (below,
// at and across the chunk size) store the same content, index and meta
// as the same lines added whole.
func TestAddShapedFromSameAsAdd(t *testing.T) {
	var lines [][]byte
	for _, n := range []int{1, 2, lineChunk - 1, lineChunk, lineChunk + 1, 3*lineChunk + 7} {
		lines = append(lines, []byte(strings.Repeat("x", n-1)+"\n"))
	}
	ctx := context.Background()
	s := newStore(t)
	whole, err := NewWriter(ctx, s, "whole", digestOf(1))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Abort()
	streamed, err := NewWriter(ctx, s, "streamed", digestOf(1))
	if err != nil {
		t.Fatal(err)
	}
	defer streamed.Abort()
	for i, l := range lines {
		if err := whole.AddShaped("olm.bundle", "p", string(rune('a'+i)), l); err != nil {
			t.Fatal(err)
		}
		if err := streamed.AddShapedFrom("olm.bundle", "p", string(rune('a'+i)), int64(len(l)), bytes.NewReader(l)); err != nil {
			t.Fatal(err)
		}
	}
	mw, err := whole.Commit(ctx, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := streamed.Commit(ctx, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if mw.SHA256 != ms.SHA256 || mw.Size != ms.Size || mw.Objects != ms.Objects || mw.IndexSize != ms.IndexSize {
		t.Fatalf("streamed meta %+v, whole %+v", ms, mw)
	}
	for _, key := range []string{contentFile, indexFile} {
		a, b := readKey(t, s, contentPrefix("whole", digestOf(1))+key), readKey(t, s, contentPrefix("streamed", digestOf(1))+key)
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs: %d bytes streamed, %d whole", key, len(b), len(a))
		}
	}
}

// TestAddShapedFromRejectsBadLines: a line with a "\n" before its end
// (in its first chunk or a later one), none at its end, a reader that
// ends early, or no bytes at all fails, and a line that failed part
// way leaves the writer failed: part of it went out.
func TestAddShapedFromRejectsBadLines(t *testing.T) {
	long := strings.Repeat("y", 2*lineChunk)
	for _, c := range []struct {
		name string
		line string
		n    int64
		want error
	}{
		{"empty", "", 0, ErrInvalidLine},
		{"no newline", "abc", 3, ErrInvalidLine},
		{"newline inside", "a\nb\n", 4, ErrInvalidLine},
		{"newline in an early chunk", "a\n" + long + "\n", int64(len(long)) + 3, ErrInvalidLine},
		{"newline only in a later chunk's middle", long + "\nz\n", int64(len(long)) + 3, ErrInvalidLine},
		{"no newline after chunks", long, int64(len(long)), ErrInvalidLine},
		{"reader short", "abc\n", 10, io.ErrUnexpectedEOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWriter(context.Background(), newStore(t), "lines", digestOf(1))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			err = w.AddShapedFrom("s", "p", "n", c.n, strings.NewReader(c.line))
			if !errors.Is(err, c.want) {
				t.Fatalf("AddShapedFrom = %v, want %v", err, c.want)
			}
			if c.n > 0 && w.AddShaped("s", "p", "n", []byte("{}\n")) == nil {
				t.Error("the writer took a line after a line failed part way")
			}
		})
	}
}
