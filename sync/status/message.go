package status

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Messages of conditions that do not depend on a sync, as catalogd words
// them where it has them.
const (
	msgUserUnavailable = "Catalog availability mode is set to Unavailable"
	msgNotPublished    = "No content has been published for this catalog yet"
)

// maxMessage is the most bytes of a condition message: see truncate.Status.
const maxMessage = int(truncate.Status)

// progressMessage says what a running sync is doing, e.g.
// "Pulling sha256:ab12cd34ef56… layer 2/3: 45.1/120.0 MB".
func progressMessage(image string, e pipeline.Event) string {
	d := shortDigest(e.Digest)
	switch e.Phase {
	case pipeline.PhaseResolving:
		return "Resolving " + image
	case pipeline.PhasePulling:
		return fmt.Sprintf("Pulling %s layer %d/%d: %s", d, e.Layer, e.Layers, byteProgress(e.BytesDone, e.BytesTotal))
	case pipeline.PhaseUnpacking:
		return "Unpacking " + d
	case pipeline.PhaseValidating:
		return fmt.Sprintf("Validating %s: %d bundles in %d packages", d, e.Bundles, e.Packages)
	case pipeline.PhaseIndexing:
		return fmt.Sprintf("Indexing %s: %d objects", d, e.Objects)
	case pipeline.PhasePublishing:
		return "Publishing " + d
	}
	return string(e.Phase) + " " + d
}

// runningMessage reports whether c says that a sync runs or waits to
// start, in the words progressMessage and waitMessage begin with.
func runningMessage(c *metav1.Condition) bool {
	if c == nil || c.Status != metav1.ConditionTrue {
		return false
	}
	word, _, _ := strings.Cut(c.Message, " ")
	switch pipeline.Phase(word) {
	case pipeline.PhaseResolving, pipeline.PhasePulling, pipeline.PhaseUnpacking,
		pipeline.PhaseValidating, pipeline.PhaseIndexing, pipeline.PhasePublishing:
		return true
	}
	return word == "Waiting"
}

// successMessage describes a finished sync.
func successMessage(r *pipeline.Result) string {
	switch r.Action {
	case pipeline.ActionReused:
		return fmt.Sprintf("Published %s in %s (content was already stored)", r.Digest, seconds(r.Duration))
	case pipeline.ActionUpToDate:
		return fmt.Sprintf("Published %s (up to date)", r.Digest)
	}
	return fmt.Sprintf("Published %s in %s", r.Digest, seconds(r.Duration))
}

// failureMessage describes a failed sync without volatile details, so the
// same cause gives the same message and a retry does not rewrite the
// status.
func failureMessage(e *pipeline.Error) string {
	var b strings.Builder
	b.WriteString(string(e.Reason))
	if e.Phase != "" && e.Phase != pipeline.PhaseFailed {
		b.WriteString(" while ")
		b.WriteString(strings.ToLower(string(e.Phase)))
	}
	if e.Err != nil {
		b.WriteString(": ")
		// Cut before Sanitize, whose patterns would otherwise scan
		// megabytes; a margin keeps the cut where it falls when Sanitize
		// shortens the text.
		b.WriteString(Sanitize(truncate.Text(e.Err.Error(), 4*truncate.Status)))
	}
	return truncate.Text(b.String(), truncate.Status)
}

// maxMirror caps a name within a message (a mirror's location, what
// verified a signature, a replica holding a lease).
const maxMirror truncate.Limit = 256

// servingMessage says what is served, through which mirror it was pulled
// when one served it, and what verified its signature when the policy
// required one.
func servingMessage(p catalog.Pointer) string {
	msg := fmt.Sprintf("Serving %s from %s", p.Digest, p.Ref)
	if p.Mirror != "" {
		msg += " via mirror " + truncate.Text(Sanitize(p.Mirror), maxMirror)
	}
	if p.VerifiedBy != "" {
		msg += ", signature verified by " + truncate.Text(Sanitize(p.VerifiedBy), maxMirror)
	}
	return truncate.Text(msg, truncate.Status)
}

// shortDigest keeps 12 hex digits: enough to tell digests apart in a
// message; status.resolvedSource has the full one.
func shortDigest(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		return d
	}
	if len(hex) > 12 {
		hex = hex[:12] + "…"
	}
	return alg + ":" + hex
}

// byteProgress renders done/total in the unit that suits total, in
// decimal units as registries and browsers show sizes.
func byteProgress(done, total int64) string {
	ref := max(done, total)
	units := []struct {
		size float64
		name string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}}
	for _, u := range units {
		if float64(ref) >= u.size {
			if total <= 0 {
				return fmt.Sprintf("%.1f %s", float64(done)/u.size, u.name)
			}
			return fmt.Sprintf("%.1f/%.1f %s", float64(done)/u.size, float64(total)/u.size, u.name)
		}
	}
	if total <= 0 {
		return fmt.Sprintf("%d B", done)
	}
	return fmt.Sprintf("%d/%d B", done, total)
}

func seconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// sanitizers are Sanitize's patterns, compiled at first use: only a
// process that writes status needs them.
type sanitizers struct {
	localAddr, uuid, requestID, time, spool, space *regexp.Regexp
	uploadID, query, emptyIDs, tempDir             *regexp.Regexp
}

var patterns = sync.OnceValue(func() *sanitizers {
	return &sanitizers{
		// "read tcp 127.0.0.1:53412->10.0.0.1:443": the local port changes
		// with every connection; the remote end is what matters.
		localAddr: regexp.MustCompile(`\b((?:tcp|udp)[46]?) \S+->`),
		uuid:      regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`),
		requestID: regexp.MustCompile(`(?i)\b((?:x-)?(?:amz-)?request[-_ ]?id|trace[-_ ]?id|correlation[-_ ]?id)(["':= ]+)[\w.+/=-]+`),
		time:      regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?`),
		spool:     regexp.MustCompile(`\S*catalogsync-spool-\S*`),
		space:     regexp.MustCompile(`\s+`),
		// S3 multipart upload ids and the query of a request URL (upload
		// ids, part numbers, signatures) differ on every attempt.
		uploadID: regexp.MustCompile(`(?i)\bupload ?id[:= ]+[\w.+/=-]+`),
		query:    regexp.MustCompile(`(https?://[^\s"?]+)\?[^\s"]*`),
		// The AWS SDK's empty identifiers of a response that never came.
		emptyIDs: regexp.MustCompile(`(?:StatusCode: 0, )?RequestID: , HostID: ,? ?`),
		tempDir:  tempDirPattern(),
	}
})

// tempDirPattern matches paths under the system temp folder, whose names
// are random.
func tempDirPattern() *regexp.Regexp {
	dirs := []string{"/tmp", "/var/tmp"}
	if d := filepath.Clean(os.TempDir()); d != "/" && d != "." {
		dirs = append(dirs, d)
	}
	for i, d := range dirs {
		dirs[i] = regexp.QuoteMeta(d)
	}
	return regexp.MustCompile(`(?:` + strings.Join(dirs, "|") + `)/[^\s:"']+`)
}

// Sanitize removes what changes from one attempt to the next although the
// cause is the same (local ports, request and trace ids, UUIDs, timestamps,
// temporary paths), collapses white space and trims trailing separators.
func Sanitize(msg string) string {
	p := patterns()
	msg = p.localAddr.ReplaceAllString(msg, "$1 ")
	msg = p.emptyIDs.ReplaceAllString(msg, "")
	msg = p.query.ReplaceAllString(msg, "$1") // before the upload id, which the query repeats
	msg = p.uploadID.ReplaceAllString(msg, "upload id <id>")
	msg = p.requestID.ReplaceAllString(msg, "$1$2<id>")
	msg = p.uuid.ReplaceAllString(msg, "<id>")
	msg = p.time.ReplaceAllString(msg, "<time>")
	msg = p.spool.ReplaceAllString(msg, "<spool file>")
	msg = p.tempDir.ReplaceAllString(msg, "<temp file>")
	// Some clients end an error with the (here empty) response body.
	return strings.TrimRight(p.space.ReplaceAllString(msg, " "), ": ")
}

// waitMessage says what a sync that has not started waits for, e.g.
// "Waiting for replica catalogsync-1, which holds the sync lease (not
// renewed since 07:50:01Z; it lapses at 07:50:13Z)".
func waitMessage(w pipeline.Wait) string {
	switch w.Reason {
	case pipeline.WaitLease:
		return fmt.Sprintf("Waiting for replica %s, which holds the sync lease (not renewed since %s; it lapses at %s)",
			truncate.Text(w.Holder, maxMirror), w.Renewed.UTC().Format("15:04:05Z"), w.Until.UTC().Format("15:04:05Z"))
	case pipeline.WaitSlot:
		return "Waiting for a free sync slot (" + truncate.Text(w.Detail, maxMirror) + ")"
	case pipeline.WaitRate:
		return "Waiting for the start-rate limit of registry " + truncate.Text(w.Detail, maxMirror)
	}
	return "Waiting (" + string(w.Reason) + ")"
}
