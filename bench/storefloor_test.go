package bench

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// storeFloor times gunzip of the layer streamed into one object of the
// store a sync of backend writes to, through the project's own store
// with the sync's settings (fs: one file; MinIO: one multipart upload,
// default part size, concurrency and checksums): a full sync cannot
// beat decompressing its input and writing those bytes once. The median
// of three, each after the writes before it reached the disk, as the
// syncs it is held against.
func storeFloor(b *testing.B, f *fixture, file, backend string) time.Duration {
	ctx := context.Background()
	var runs []time.Duration
	for i := 0; i < 3; i++ {
		var st storage.Store
		var err error
		if backend == "s3" {
			m := f.minio
			st, err = s3.New(ctx, s3.Config{Bucket: f.bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
				AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey, Prefix: "floor", TempDir: b.TempDir()})
		} else {
			st, err = fs.New(b.TempDir())
		}
		if err != nil {
			b.Fatal(err)
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
		runs = append(runs, time.Since(start))
	}
	return medianDuration(runs)
}

// medianDuration is the median of ds (the upper one of an even count).
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
