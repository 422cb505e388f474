package bench

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSync syncs each catalog from the registry into a fresh local
// store and a fresh prefix of a MinIO bucket, in the same run as its
// gunzip floor and its store floor (storeFloor). Each iteration runs the
// store floor, then the built `catalogsync sync` as its own process, each
// after the writes before it reached the disk; peak RSS is that process's
// VmHWM, peak anon its sampled anonymous resident memory, each the
// highest of the iterations. x-store-floor is the median sync over the
// median floor of the same iterations; user-s and system-s the median CPU
// of the sync processes.
func BenchmarkSync(b *testing.B) {
	for _, c := range catalogs {
		for _, backend := range []string{"fs", "s3"} {
			b.Run(c.name+"/"+backend, func(b *testing.B) {
				f := setup(b)
				img := f.image(b, c.name)
				floor := gunzipFloor(b, img.layerFile)
				b.SetBytes(img.fbcBytes)
				var rss, anon int64
				var inProcess time.Duration
				var walls, floors, users, systems []time.Duration
				phases := map[string]time.Duration{}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					floors = append(floors, storeFloor(b, f, img.layerFile, backend))
					to := f.freshStore(b, backend, fmt.Sprintf("sync-%s-%d", c.name, syncPrefixes.Add(1)))
					cmd := f.syncCmd(img.ref, to)
					var stdout, stderr bytes.Buffer
					cmd.Stderr = &stderr
					cmd.Stdout = &stdout
					flushDisks()
					b.StartTimer()
					start := time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatalf("sync: %v\n%s", err, stderr.String())
					}
					walls = append(walls, time.Since(start))
					b.StopTimer()
					f.drop(b, to)
					ps := cmd.ProcessState
					users, systems = append(users, ps.UserTime()), append(systems, ps.SystemTime())
					b.Logf("store floor %v, sync %v (user %v, system %v)", floors[i].Round(time.Millisecond),
						walls[i].Round(time.Millisecond), ps.UserTime().Round(time.Millisecond), ps.SystemTime().Round(time.Millisecond))
					rss = max(rss, peakRSS(b, stderr.String()))
					anon = max(anon, peakAnon(b, stderr.String()))
					for ph, d := range syncPhases(stdout.String()) {
						phases[ph] += d
					}
					inProcess += syncDuration(b, stdout.String())
					b.StartTimer()
				}
				b.StopTimer()
				reportSync(b, img.fbcBytes, rss, anon, floor, inProcess)
				sfloor := medianDuration(floors)
				b.ReportMetric(sfloor.Seconds(), "store-floor-s")
				b.ReportMetric(medianDuration(walls).Seconds()/sfloor.Seconds(), "x-store-floor")
				b.ReportMetric(medianDuration(users).Seconds(), "user-s")
				b.ReportMetric(medianDuration(systems).Seconds(), "system-s")
				for ph, d := range phases {
					b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), ph+"-ms")
				}
			})
		}
	}
}

// syncPrefixes numbers the MinIO prefixes BenchmarkSync writes: each
// sync of the test binary gets a fresh one, under -count too (a prefix
// written before would make the sync find its catalog up to date).
var syncPrefixes atomic.Int64

// reportSync reports what both sync benchmarks measure: the catalog's
// size, the peaks over every sync, the gunzip floor and the wall time
// per iteration against it; and the sync's own time against it (the
// total of inProcess over the iterations): from resolving to publishing,
// without the process's start, as a running replica spends it on a
// webhook.
func reportSync(b *testing.B, fbcBytes, rss, anon int64, floor, inProcess time.Duration) {
	wall := b.Elapsed().Seconds() / float64(b.N)
	own := inProcess.Seconds() / float64(b.N)
	b.ReportMetric(own*1000, "in-process-ms")
	b.ReportMetric(own/floor.Seconds(), "x-floor-in-process")
	b.ReportMetric(float64(fbcBytes)/1e6, "catalog-MB")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(anon)/(1<<20), "peak-anon-MiB")
	b.ReportMetric(floor.Seconds(), "gunzip-floor-s")
	b.ReportMetric(wall/floor.Seconds(), "x-floor")
}

// s3Env points a command at a prefix of the run's MinIO bucket.
func s3Env(f *fixture, prefix string) []string {
	m := f.minio
	return []string{"CATALOGSYNC_S3_BUCKET=" + f.bucket, "CATALOGSYNC_S3_ENDPOINT=" + m.Endpoint,
		"CATALOGSYNC_S3_REGION=" + m.Region, "CATALOGSYNC_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey,
		"CATALOGSYNC_S3_PREFIX=" + prefix}
}

// summaryLine is the summary's first line, which ends with the sync's own
// duration: `catalog "x": Published sha256:… (959ms)`.
var summaryLine = regexp.MustCompile(`(?m)^catalog "[^"]*": \S+ \S+ \(([^)]+)\)\s*$`)

// syncDuration reads the sync's own duration from its summary.
func syncDuration(b *testing.B, stdout string) time.Duration {
	d, ok := syncDurationOf(stdout)
	if !ok {
		b.Fatalf("no summary line with the sync's duration in:\n%s", stdout)
	}
	return d
}

// syncDurationOf is syncDuration without a benchmark to fail.
func syncDurationOf(stdout string) (time.Duration, bool) {
	m := summaryLine.FindStringSubmatch(stdout)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	return d, err == nil
}

// syncPhases reads the phase durations from the summary `catalogsync sync`
// prints ("  phases      resolving 4ms, pulling 1.44s, ..."); none when
// the summary has no such line.
func syncPhases(stdout string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, line := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "phases")
		if !ok {
			continue
		}
		for _, part := range strings.Split(rest, ",") {
			f := strings.Fields(part)
			if len(f) != 2 {
				continue
			}
			if d, err := time.ParseDuration(f[1]); err == nil {
				out[f[0]] = d
			}
		}
	}
	return out
}

// peakRSS reads the peak the child reported for itself (VmHWM): its
// rusage would include this benchmark's own high-water mark, which Linux
// carries across exec.
func peakRSS(b *testing.B, stderr string) int64 {
	if v := peakRSSOf(stderr); v > 0 {
		return v
	}
	b.Fatalf("no peak-rss-kib line in:\n%s", stderr)
	return 0
}

// peakAnon reads the anonymous peak the child sampled for itself
// (peak-anon-kib): VmHWM also counts the executable's mapped pages.
func peakAnon(b *testing.B, stderr string) int64 {
	if v, ok := kibOf(anonLine, stderr); ok {
		return v
	}
	b.Fatalf("no peak-anon-kib line in:\n%s", stderr)
	return 0
}

// gunzipFloor times `gzip -dc` of the same layer to /dev/null: no sync can
// beat decompressing its input once.
func gunzipFloor(b *testing.B, file string) time.Duration {
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 3; i++ {
		start := time.Now()
		cmd := exec.Command("gzip", "-dc", file)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("gzip -dc: %v", err)
		}
		best = min(best, time.Since(start))
	}
	return best
}
