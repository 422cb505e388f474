package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// Scenario 3: two replicas behind the same bucket and apiserver, both
// notified of every push. Each pushed digest is pulled and published by
// exactly one of them (the other waits on the store's sync lease and only
// finds it published); the pointer, the status and both replicas' answers
// agree.
func TestTwoReplicas(t *testing.T) {
	s := newStack(t, options{replicas: 2})
	s.createCatalog("replicated", "acme/replicated:v1")

	// Catalogs big enough (a few MB) that both replicas are busy at once.
	images := []imagebuild.Image{
		imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), 40), "/configs"),
		imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), 41), "/configs"),
		imagebuild.FromDir(fbcDir("tiny"), "/configs"),
	}
	waited := 0
	for round, img := range images {
		before := [2]int{}
		for i, r := range s.replicas {
			before[i] = metric(t, r, "catalogsync_syncs_total", `result="Published"`)
		}
		d := s.push("acme/replicated:v1", img)
		st := s.waitServing("replicated", d, 90*time.Second)
		// Both replicas must have finished with this digest.
		eventually(t, "both replicas done", 60*time.Second, func() bool {
			for _, r := range s.replicas {
				if v := catalogView(t, r.URL, "replicated"); v.Phase != "Published" || v.Published.Digest != d {
					return false
				}
			}
			return true
		})
		published := 0
		for i, r := range s.replicas {
			published += metric(t, r, "catalogsync_syncs_total", `result="Published"`) - before[i]
		}
		if published != 1 {
			t.Fatalf("round %d: digest %s published by %d syncs, want exactly 1", round, d, published)
		}
		if p, _ := s.pointer("replicated"); p.Digest != d {
			t.Fatalf("round %d: pointer %s, want %s", round, p.Digest, d)
		}
		// The status names the published digest and one of the replicas'
		// URLs; both replicas answer identically.
		if !strings.HasSuffix(st.Resolved, "@"+d) || st.cond("Serving").Status != "True" {
			t.Fatalf("round %d: status %+v", round, st)
		}
		var answers [][]byte
		for _, r := range s.replicas {
			code, b := get(t, r.URL+"/catalogs/replicated/api/v1/metas?schema=olm.package")
			if code != 200 {
				t.Fatalf("round %d: %s: %d", round, r.URL, code)
			}
			answers = append(answers, b)
		}
		if !bytes.Equal(answers[0], answers[1]) {
			t.Fatalf("round %d: the replicas answer differently", round)
		}
		t.Logf("round %d: %s published once; status %s/%s", round, d, st.cond("Progressing").Reason, st.cond("Serving").Reason)
	}
	for _, r := range s.replicas {
		waited += strings.Count(r.Log(), "another replica is syncing this catalog")
	}
	t.Logf("a replica waited on the other's lease %d times in %d rounds", waited, len(images))

	// Settled (both replicas' syncs ended, each written to the status
	// before its lease was given up): the status stays consistent with
	// the pointer (no replica rewrites it with something older).
	s.waitSettled(nil, []string{"replicated"})
	p, _ := s.pointer("replicated")
	st := s.status("replicated")
	if !strings.HasSuffix(st.Resolved, "@"+p.Digest) || st.cond("Progressing").Reason != "Succeeded" {
		t.Fatalf("status %+v, pointer %s", st, p.Digest)
	}
}

// catalogView is the part of GET /api/v1/catalogs/{name} the tests read.
type view struct {
	Phase     string `json:"phase"`
	Published struct {
		Digest string `json:"digest"`
	} `json:"published"`
	Running *struct {
		Progress struct {
			Phase     string `json:"phase"`
			BytesDone int64  `json:"bytesDone"`
		} `json:"progress"`
	} `json:"running"`
	Queued   *struct{} `json:"queued"`
	LastSync *struct {
		State  string `json:"state"`
		Result *struct {
			Action string `json:"action"`
		} `json:"result"`
		Error *struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"lastSync"`
	ConsecutiveFailures int `json:"consecutiveFailures"`
}

func catalogView(t *testing.T, base, name string) view {
	t.Helper()
	code, b := get(t, fmt.Sprintf("%s/api/v1/catalogs/%s", base, name))
	var v view
	if code == 200 {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("catalog view %s: %v", b, err)
		}
	}
	return v
}
