package bench

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// storeFloor times gunzip of the layer streamed into one object of the
// store a sync of backend writes to, through the project's own store
// with the sync's settings (fs: one file; MinIO: one multipart upload,
// default part size, concurrency and checksums): a full sync cannot
// beat decompressing its input and writing those bytes once. One run,
// after the writes before it reached the disk, as each sync it is held
// against: BenchmarkSync runs one before each sync, because what a page
// of new file costs drifts over a run (see docs/notes/benchmarks.md).
func storeFloor(b *testing.B, f *fixture, file, backend string) time.Duration {
	ctx := context.Background()
	to := f.freshStore(b, backend, fmt.Sprintf("floor-%d", syncPrefixes.Add(1)))
	defer f.drop(b, to)
	var st storage.Store
	if to.dir == "" {
		st = f.s3Store(b, to.prefix)
	} else {
		var err error
		if st, err = fs.New(to.dir); err != nil {
			b.Fatal(err)
		}
	}
	flushDisks()
	start := time.Now()
	cmd := exec.Command("gzip", "-dc", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Put(ctx, "floor", out); err != nil {
		b.Fatalf("store floor: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("gzip -dc: %v", err)
	}
	return time.Since(start)
}

// medianDuration is the median of ds (the upper one of an even count).
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
