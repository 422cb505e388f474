package status

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

func TestProgressMessages(t *testing.T) {
	const d = "sha256:ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"
	for _, tc := range []struct {
		e    pipeline.Event
		want string
	}{
		{pipeline.Event{Phase: pipeline.PhaseResolving}, "Resolving registry.example.test/cat:v1"},
		{pipeline.Event{Phase: pipeline.PhasePulling, Digest: d, Layer: 2, Layers: 3, BytesDone: 45_100_000, BytesTotal: 120_000_000},
			"Pulling sha256:ab12cd34ef56… layer 2/3: 45.1/120.0 MB"},
		{pipeline.Event{Phase: pipeline.PhasePulling, Digest: d, Layer: 1, Layers: 1, BytesDone: 0, BytesTotal: 12_410},
			"Pulling sha256:ab12cd34ef56… layer 1/1: 0.0/12.4 kB"},
		{pipeline.Event{Phase: pipeline.PhasePulling, Digest: d, Layer: 1, Layers: 1, BytesDone: 10, BytesTotal: 900},
			"Pulling sha256:ab12cd34ef56… layer 1/1: 10/900 B"},
		{pipeline.Event{Phase: pipeline.PhasePulling, Digest: d, Layer: 1, Layers: 1, BytesDone: 2_500_000_000, BytesTotal: 3_000_000_000},
			"Pulling sha256:ab12cd34ef56… layer 1/1: 2.5/3.0 GB"},
		{pipeline.Event{Phase: pipeline.PhaseUnpacking, Digest: d}, "Unpacking sha256:ab12cd34ef56…"},
		{pipeline.Event{Phase: pipeline.PhaseValidating, Digest: d, Bundles: 745, Packages: 33}, "Validating sha256:ab12cd34ef56…: 745 bundles in 33 packages"},
		{pipeline.Event{Phase: pipeline.PhaseIndexing, Digest: d, Objects: 1234}, "Indexing sha256:ab12cd34ef56…: 1234 objects"},
		{pipeline.Event{Phase: pipeline.PhasePublishing, Digest: d}, "Publishing sha256:ab12cd34ef56…"},
	} {
		if got := progressMessage("registry.example.test/cat:v1", tc.e); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.e.Phase, got, tc.want)
		}
	}
	if got := successMessage(&pipeline.Result{Digest: d, Action: pipeline.ActionPublished, Duration: 3210 * time.Millisecond}); got != "Published "+d+" in 3.2s" {
		t.Errorf("success: %q", got)
	}
	if got := successMessage(&pipeline.Result{Digest: d, Action: pipeline.ActionPublished, Duration: 125 * time.Second}); got != "Published "+d+" in 2m5s" {
		t.Errorf("success: %q", got)
	}
}

// Two failures with the same cause give the same message, however the
// volatile parts of their errors differ.
func TestFailureMessageIsStable(t *testing.T) {
	tmp := filepath.Join(os.TempDir(), "catalogsync-spool-")
	mk := func(port int, id, uuid, ts, spool string) *pipeline.Error {
		return &pipeline.Error{Phase: pipeline.PhasePulling, Reason: pipeline.ReasonRegistry, Retryable: true,
			Err: fmt.Errorf("get layer: read tcp 127.0.0.1:%d->10.1.2.3:443: read: connection reset by peer; x-request-id: %s; trace %s at %s; spool %s%s:  ",
				port, id, uuid, ts, tmp, spool)}
	}
	a := failureMessage(mk(51234, "a1b2c3", "123e4567-e89b-12d3-a456-426614174000", "2026-11-29T17:25:37.113236Z", "123456"))
	b := failureMessage(mk(40001, "ffee99", "9f0e4567-e89b-12d3-a456-426614174999", "2026-11-29T17:26:01Z", "987654"))
	if a != b {
		t.Fatalf("messages differ:\n%s\n%s", a, b)
	}
	want := "RegistryError while pulling: get layer: read tcp 10.1.2.3:443: read: connection reset by peer; x-request-id: <id>; trace <id> at <time>; spool <spool file>"
	if a != want {
		t.Fatalf("got  %q\nwant %q", a, want)
	}
	// A failed S3 multipart upload: the upload id and the request's query
	// change every attempt.
	s3err := func(id string, part int) string {
		return failureMessage(&pipeline.Error{Phase: pipeline.PhaseIndexing, Reason: pipeline.ReasonStorage, Retryable: true, Err: fmt.Errorf(
			`s3: put "c/catalog.jsonl": upload multipart failed, upload id: %s, cause: operation error S3: UploadPart, exceeded maximum number of attempts, 3, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Put "http://store.example.test:9000/b/c/catalog.jsonl?partNumber=%d&uploadId=%s&x-id=UploadPart": connection reset by peer`, id, part, id)})
	}
	if a, b := s3err("Yzg1ZmE3MzItNTQ0M", 1), s3err("QmffpGV689CgFpceP", 2); a != b || strings.Contains(a, "RequestID") || strings.Contains(a, "x-id") || !strings.Contains(a, "store.example.test:9000/b/c/catalog.jsonl") {
		t.Fatalf("S3 messages:\n%s\n%s", a, b)
	}
	// What tells causes apart stays.
	if c := failureMessage(&pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonRegistry, Err: errors.New("HEAD registry.example.test:5000/x:v1: 401 Unauthorized")}); !strings.Contains(c, "registry.example.test:5000") || !strings.Contains(c, "401") {
		t.Fatalf("lost the host or the status: %q", c)
	}
	long := failureMessage(&pipeline.Error{Reason: pipeline.ReasonInternal, Err: errors.New(strings.Repeat("é", 3000))})
	if len(long) > maxMessage || !strings.HasSuffix(long, "…") {
		t.Fatalf("long message: %d bytes", len(long))
	}
}

// status.urls.base must pass the CRD's isURL rule with an http(s) scheme.
func TestNewWriterRefusesBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "/catalogs", "catalogsync.svc:8080", "ftp://catalogsync.svc"} {
		if _, err := NewWriter(nil, nil, nil, u); !errors.Is(err, ErrBaseURL) {
			t.Errorf("NewWriter(%q): %v, want ErrBaseURL", u, err)
		}
	}
}

// Each unit starts at its exact size; an unknown total (0) prints done
// alone; twelve hex digits are not cut.
func TestMessageBoundaries(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{
		{1_000_000_000, 1_000_000_000, "1.0/1.0 GB"},
		{999_999_999, 999_999_999, "1000.0/1000.0 MB"},
		{1_000_000, 1_000_000, "1.0/1.0 MB"},
		{1_000, 1_000, "1.0/1.0 kB"},
		{999, 999, "999/999 B"},
		{2_000_000, 0, "2.0 MB"},
		{512, 0, "512 B"},
		{512, -1, "512 B"},
	} {
		if got := byteProgress(tc.done, tc.total); got != tc.want {
			t.Errorf("byteProgress(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	if got := shortDigest("sha256:0123456789ab"); got != "sha256:0123456789ab" {
		t.Errorf("12 hex digits cut: %q", got)
	}
	if got := shortDigest("sha256:0123456789abc"); got != "sha256:0123456789ab…" {
		t.Errorf("13 hex digits: %q", got)
	}
	if got := seconds(time.Minute); got != "1m0s" {
		t.Errorf("a minute: %q", got)
	}
	if got := seconds(time.Minute - time.Second/10); got != "59.9s" {
		t.Errorf("just under a minute: %q", got)
	}
}

// The temp folder the process uses is scrubbed from messages wherever it
// is; a temp folder of "/" adds nothing (it would match every path).
func TestTempDirPatternFollowsTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", "/work/spool")
	if re := tempDirPattern(); !re.MatchString("open /work/spool/x1/catalog.jsonl") || !re.MatchString("/tmp/a") {
		t.Errorf("%s misses the temp folder", re)
	}
	t.Setenv("TMPDIR", "/")
	if re := tempDirPattern(); re.MatchString("open /etc/catalog.jsonl") {
		t.Errorf("%s with TMPDIR=/ matches any path", re)
	}
}
