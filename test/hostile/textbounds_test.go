package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// maxLogLine is the longest line serve may write: a handful of values of
// at most truncate.Log bytes each, quoted.
const maxLogLine = 8 * int(truncate.Log)

// hostileNames are FBC files of 200 packages whose 50 KB names (but the
// first's) are
// invalid, in folders whose names carry a terminal escape, a bell, a
// bidirectional override and bytes that are not UTF-8: a 10 MB
// validation error that names each file.
func hostileNames() []imagebuild.Entry {
	var es []imagebuild.Entry
	for i := range 200 {
		pad := strings.Repeat("X", 50<<10)
		if i == 0 {
			pad = "X" // its folder's name shows within the first bytes of the message
		}
		body := fmt.Sprintf(`{"schema":"olm.package","name":"Bad-%03d-\u001b[2J\u202e-%s"}`+"\n", i, pad)
		name := fmt.Sprintf("configs/p%03d-\x1b[2J\a\u202e\xff\xfe/catalog.json", i)
		es = append(es, imagebuild.Entry{Name: name, Body: []byte(body)})
	}
	return es
}

// TestHostileCatalogTextBounded publishes nothing from a catalog of 200
// huge, invalid package names full of control characters and bytes that
// are not UTF-8, and checks every place its validation error reaches on a
// running `catalogsync serve`: each log line stays short, and the REST
// answer's error is bounded, valid UTF-8 and free of control characters.
func TestHostileCatalogTextBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry and catalogsync serve")
	}
	reg := servers.StartRegistry(t)
	img := reg.Host + "/acme/hostile-names:v1"
	_, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), img, imagebuild.Image{
		Layers: []imagebuild.Layer{{DirPrefix: "/configs", Entries: hostileNames()}},
		Labels: map[string]string{imagebuild.ConfigsLabel: "/configs"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "catalogsync.yaml")
	writeFile(t, cfg, fmt.Sprintf("storage:\n  dir: %s\nregistries:\n- name: %s\n  plainHTTP: true\ncatalogs:\n- name: names\n  image: %s\n",
		filepath.Join(dir, "store"), reg.Host, img))
	cs := servers.StartCatalogsync(t, []string{"--config", cfg, "--tmp-dir", t.TempDir(), "--no-docker-config", "--poll-check-interval", "1h", "--gc-interval", "0"})

	var v catalogView
	eventually(t, "the failed sync of the hostile catalog", 2*time.Minute, func() bool {
		resp, err := http.Get(cs.URL + "/api/v1/catalogs/names")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		v = catalogView{}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("GET catalog: %d %v", resp.StatusCode, err)
		}
		return v.LastSync != nil && v.LastSync.Error != nil
	})
	msg := v.LastSync.Error.Message
	if v.LastSync.Error.Reason != "InvalidCatalog" || !strings.Contains(msg, "Bad-000") {
		t.Errorf("REST error %s: %.200q, want InvalidCatalog naming the first bad package", v.LastSync.Error.Reason, msg)
	}
	checkShown(t, "REST error message", msg, int(truncate.REST))

	// The log: the failed sync's line and every other one short and
	// free of what a terminal would act on.
	f, err := os.Open(cs.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	longest, lines, failed := 0, 0, false
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lines++
			longest = max(longest, len(line))
			failed = failed || strings.Contains(line, `msg="sync failed"`)
			if strings.ContainsAny(line, "\x1b\x07\u202e") || !utf8.ValidString(line) {
				t.Errorf("log line %d carries a control character or invalid UTF-8: %.300q", lines, line)
			}
		}
		if err != nil {
			break
		}
	}
	if !failed {
		t.Error(`serve logged no "sync failed"`)
	}
	if longest > maxLogLine {
		t.Errorf("longest of %d log lines: %d bytes, want at most %d", lines, longest, maxLogLine)
	}
	t.Logf("%d log lines, the longest %d bytes; REST message %d bytes", lines, longest, len(msg))
}

// checkShown checks text shown to people: at most limit bytes, valid
// UTF-8, no control characters but newline and tab, no bidirectional
// overrides.
func checkShown(t *testing.T, what, s string, limit int) {
	t.Helper()
	if len(s) > limit {
		t.Errorf("%s: %d bytes, want at most %d", what, len(s), limit)
	}
	if !utf8.ValidString(s) {
		t.Errorf("%s: not valid UTF-8: %.200q", what, s)
	}
	for _, r := range s {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || r == '\u202e' {
			t.Errorf("%s: carries %U: %.200q", what, r, s)
			return
		}
	}
}
