package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// floodEvents sends 600 authenticated ApiServerSource events naming the
// catalog: 300 with 256 KiB ids and subjects (refused: over the 1 KiB
// bound) and 300 with distinct ids and subjects at the bound (accepted,
// each a trigger with its own reason). The process's memory grows by at
// most 64 MiB, and the catalog's REST answer stays under 64 KiB, with at
// most 8 reasons listed and the rest counted.
func floodEvents(t *testing.T, e *env) {
	before := e.rss()
	e.resetPeak()
	huge := strings.Repeat("x", 256<<10)
	for i := range 600 {
		id, subject, want := fmt.Sprintf("%d-%s", i, huge), "/"+huge, http.StatusBadRequest
		if i%2 == 1 {
			pad := strings.Repeat("s", 1024)
			id, subject, want = fmt.Sprintf("flood-%d", i), fmt.Sprintf("/%d/%s", i, pad)[:1024], http.StatusAccepted
		}
		body, _ := json.Marshal(map[string]any{
			"specversion": "1.0", "id": id, "source": "https://kube.invalid", "type": "dev.knative.apiserver.ref.add",
			"subject": subject, "datacontenttype": "application/json",
			"data": map[string]string{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog", "name": catalogName},
		})
		code, msg := e.send(t, request{path: "/events", body: body,
			headers: map[string]string{"Authorization": "Bearer " + eventsToken, "Content-Type": "application/cloudevents+json"}})
		if code != want {
			t.Fatalf("event %d: %d %s, want %d", i, code, firstLine(msg), want)
		}
	}
	code, b := e.get(t, "/api/v1/catalogs/"+catalogName)
	if code != http.StatusOK || len(b) > 64<<10 {
		t.Fatalf("GET catalog after the flood: %d, %d bytes", code, len(b))
	}
	type op struct {
		Reasons     []string `json:"reasons"`
		MoreReasons int      `json:"moreReasons"`
	}
	var v struct{ Running, Queued, LastSync *op }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*op{v.Running, v.Queued, v.LastSync} {
		if o != nil && len(o.Reasons) > 8 {
			t.Errorf("%d reasons kept", len(o.Reasons))
		}
	}
	peak := e.peakRSS()
	t.Logf("600 events: RSS %s before, peak %s after; catalog answer %d bytes", mib(before), mib(peak), len(b))
	if before > 0 && peak-before > 64<<20 {
		t.Fatalf("memory grew by %s", mib(peak-before))
	}
	e.waitIdle(t, time.Minute)
}

// rss is serve's resident set size in bytes now (0: unknown).
func (e *env) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.pid))
	if e.pid == 0 || err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
