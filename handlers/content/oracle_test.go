package content

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/servers"
)

// TestHTTPSemanticsOracle sends the same conditional and range requests
// to this handler and to the reference catalogd (catalogd-ref, serving
// the same catalog) and compares the status and the headers that carry
// HTTP semantics. Where this server deliberately does more than catalogd
// (an ETag, and the length of a HEAD answer on /metas), the difference
// is expected and named; any other difference fails.
func TestHTTPSemanticsOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference catalogd")
	}
	bin := servers.Peer(t, "catalogd-ref")
	ref := &client{t: t, base: startCatalogdRef(t, bin), hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	objs, _ := tinyObjects(t)
	s := openFS(t)()
	store(t, s, "tiny", "v1", objs)
	ours := serve(t, New(s))

	var checks, differ, unexpected int
	for _, path := range []string{"/catalogs/tiny/api/v1/all", "/catalogs/tiny/api/v1/metas", "/catalogs/tiny/api/v1/metas?package=prometheus"} {
		refBase, ourBase := ref.get(path), ours.get(path)
		for _, hs := range oracleHeaderSets {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				a := ref.do(method, path, hs.fill(refBase)...)
				b := ours.do(method, path, hs.fill(ourBase)...)
				for field, pair := range httpSemantics(a, b) {
					checks++
					if pair[0] == pair[1] {
						continue
					}
					differ++
					why := expectedDifference(method, path, hs.name, field, b.code)
					if why == "" {
						unexpected++
						t.Errorf("%s %s [%s] %s: catalogd %q, ours %q", method, path, hs.name, field, pair[0], pair[1])
						continue
					}
					t.Logf("%s %s [%s] %s: catalogd %q, ours %q (expected: %s)", method, path, hs.name, field, pair[0], pair[1], why)
				}
			}
		}
	}
	t.Logf("%d checks, %d differ from catalogd, %d unexpectedly", checks, differ, unexpected)
}

// headerSet is a request's headers; {etag} and {lm} (and {lm-1h}) stand
// for the ETag and Last-Modified the server itself sent for the path.
type headerSet struct {
	name    string
	headers []string
}

var oracleHeaderSets = []headerSet{
	{"plain", nil},
	{"INM own", []string{"If-None-Match: {etag}"}},
	{"INM other", []string{`If-None-Match: "other"`}},
	{"INM *", []string{"If-None-Match: *"}},
	{"IMS lm", []string{"If-Modified-Since: {lm}"}},
	{"IMS lm-1h", []string{"If-Modified-Since: {lm-1h}"}},
	{"IUS lm", []string{"If-Unmodified-Since: {lm}"}},
	{"IUS lm-1h", []string{"If-Unmodified-Since: {lm-1h}"}},
	{"IM other", []string{`If-Match: "other"`}},
	{"range first", []string{"Range: bytes=0-9"}},
	{"range open", []string{"Range: bytes=10-"}},
	{"range suffix", []string{"Range: bytes=-5"}},
	{"range past end", []string{"Range: bytes=0-99999"}},
	{"range multi", []string{"Range: bytes=0-1,5-6"}},
	{"range unsatisfiable", []string{"Range: bytes=99999-"}},
	{"range invalid", []string{"Range: bytes=abc"}},
	{"range other unit", []string{"Range: items=0-1"}},
	{"range upper case", []string{"Range: BYTES = 5-9"}},
	{"range trailing comma", []string{"Range: bytes=5-9,"}},
	{"range suffix zero", []string{"Range: bytes=-0"}},
	{"range reversed", []string{"Range: bytes=9-5"}},
	{"range plus sign", []string{"Range: bytes=+1-5"}},
	{"range empty set", []string{"Range: bytes="}},
	{"range huge", []string{"Range: bytes=99999999999999999999-"}},
	{"if-range own etag", []string{"Range: bytes=0-9", "If-Range: {etag}"}},
	{"if-range lm", []string{"Range: bytes=0-9", "If-Range: {lm}"}},
	{"if-range other etag", []string{"Range: bytes=0-9", `If-Range: "other"`}},
	{"if-range lm-1h", []string{"Range: bytes=0-9", "If-Range: {lm-1h}"}},
	{"range with INM own", []string{"Range: bytes=0-9", "If-None-Match: {etag}"}},
}

func (hs headerSet) fill(base response) []string {
	tag := base.header.Get("ETag")
	if tag == "" {
		tag = `"none-sent"` // catalogd sends no ETag: a tag that cannot match
	}
	lm, _ := http.ParseTime(base.header.Get("Last-Modified"))
	r := strings.NewReplacer("{etag}", tag, "{lm-1h}", lm.Add(-time.Hour).Format(http.TimeFormat), "{lm}", lm.Format(http.TimeFormat))
	out := make([]string, len(hs.headers))
	for i, h := range hs.headers {
		out[i] = r.Replace(h)
	}
	return out
}

// httpSemantics pairs catalogd's and our value of each compared field.
func httpSemantics(ref, ours response) map[string][2]string {
	field := func(f func(response) string) [2]string { return [2]string{f(ref), f(ours)} }
	presence := func(k string) func(response) string {
		return func(r response) string { return fmt.Sprint(r.header.Get(k) != "") }
	}
	header := func(k string) func(response) string { return func(r response) string { return r.header.Get(k) } }
	return map[string][2]string{
		"status":                field(func(r response) string { return fmt.Sprint(r.code) }),
		"Content-Length":        field(header("Content-Length")),
		"Content-Range":         field(header("Content-Range")),
		"Accept-Ranges":         field(header("Accept-Ranges")),
		"ETag present":          field(presence("ETag")),
		"Last-Modified present": field(presence("Last-Modified")),
		"multipart": field(func(r response) string {
			return fmt.Sprint(strings.HasPrefix(r.header.Get("Content-Type"), "multipart/byteranges"))
		}),
	}
}

// expectedDifference names why this server answers a check differently
// from catalogd, or returns "" for a difference that is a bug.
func expectedDifference(method, path, set, field string, code int) string {
	metas := strings.Contains(path, "/metas")
	switch {
	case field == "ETag present":
		return "catalogd sends no ETag"
	case field == "Last-Modified present" && code == http.StatusNotModified:
		return "with an ETag, net/http's 304 leaves Last-Modified out"
	case strings.Contains(set, "INM own") || set == "if-range own etag":
		return "catalogd has no ETag to match"
	case metas && method == http.MethodHead && field == "Content-Length":
		return "catalogd's metas handler answers HEAD without a length"
	}
	return ""
}

// startCatalogdRef stores the tiny catalog with catalogd-ref and serves
// it on a loopback port, returning the base URL.
func startCatalogdRef(t *testing.T, bin string) string {
	t.Helper()
	fbc := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs/catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fbc, "catalog.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if out, err := exec.Command(bin, "store", "-fbc", fbc, "-root", root, "-name", "tiny").CombinedOutput(); err != nil {
		t.Fatalf("catalogd-ref store: %v\n%s", err, out)
	}
	addr := freeport.Addr(t)
	cmd := exec.Command(bin, "serve", "-root", root, "-addr", addr)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Bounded: a refused connection means not listening yet.
	for range 500 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("catalogd-ref did not listen on %s", addr)
	return ""
}
