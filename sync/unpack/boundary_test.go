package unpack

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLimitsAtTheBoundary: every cap admits exactly its value and refuses
// one more.
func TestLimitsAtTheBoundary(t *testing.T) {
	body := strings.Repeat("x", 1000)
	l := layer(t, ent{name: "configs/a", body: body}, ent{name: "configs/b", body: body}, ent{name: "configs/c", body: "y"})
	// Without its end-of-archive blocks the stream is read to its last
	// byte, so the cap is exact.
	l = l[:len(l)-1024]
	roomy := Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 100}
	for _, tc := range []struct {
		name     string
		at, over Limits
	}{
		{"bytes", Limits{MaxBytes: int64(len(l)), MaxFileBytes: 1 << 20, MaxEntries: 100},
			Limits{MaxBytes: int64(len(l)) - 1, MaxFileBytes: 1 << 20, MaxEntries: 100}},
		{"file bytes", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1000, MaxEntries: 100},
			Limits{MaxBytes: 1 << 20, MaxFileBytes: 999, MaxEntries: 100}},
		{"entries", Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 3},
			Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 2}},
	} {
		if files, _, err := run(t, "configs", tc.at, l); err != nil || len(files) != 3 {
			t.Errorf("%s at the cap: %v (%d files)", tc.name, err, len(files))
		}
		if _, _, err := run(t, "configs", tc.over, l); !errors.Is(err, ErrLimit) {
			t.Errorf("%s one over the cap: %v", tc.name, err)
		}
	}
	if _, _, err := run(t, "configs", roomy, l); err != nil {
		t.Fatal(err)
	}
}

// TestWalkCompareIsWalkDir: WalkCompare orders any set of paths exactly as
// fs.WalkDir visits them on a real directory.
func TestWalkCompareIsWalkDir(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	parts := []string{"a", "a.b", "a-b", "ab", "B", "b", "a0", "z", "_", "a~"}
	for round := range 50 {
		dir := t.TempDir()
		var want []string
		for range 12 {
			depth := 1 + r.IntN(3)
			var segs []string
			for range depth {
				segs = append(segs, parts[r.IntN(len(parts))])
			}
			p := filepath.Join(segs...)
			// A file where a directory is needed, or the reverse: skip it.
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
				continue
			}
		}
		var got []string
		err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				want = append(want, p)
				got = append(got, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		slices.SortFunc(got, WalkCompare)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d:\n got %q\nwant %q", round, got, want)
		}
		for _, p := range want {
			if WalkCompare(p, p) != 0 {
				t.Fatalf("%q does not equal itself", p)
			}
		}
	}
}
