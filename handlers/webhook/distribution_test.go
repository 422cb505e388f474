package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Distribution: blobs (by media type or by URL) are skipped without
// ending the batch.
func TestDistributionBlobsSkipped(t *testing.T) {
	d := newDistribution(ReceiverConfig{})
	body := `{"events":[
{"id":"1","action":"push","target":{"mediaType":"application/octet-stream","repository":"acme/cat","url":"https://registry.example.test/v2/acme/cat/manifests/x"},"request":{"host":"registry.example.test"}},
{"id":"2","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/cat","url":"https://registry.example.test/v2/acme/cat/blobs/sha256:ab"},"request":{"host":"registry.example.test"}},
{"id":"3","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/cat","tag":"v1","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","url":"https://registry.example.test/v2/acme/cat/manifests/v1"},"request":{"host":"registry.example.test"}}]}`
	r := httptest.NewRequest(http.MethodPost, "/hooks/distribution", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
	ps, err := d.Parse(r, []byte(body))
	if err != nil || len(ps) != 1 || ps[0].Tag != "v1" {
		t.Fatalf("two blobs then a manifest: %+v %v", ps, err)
	}
}

// A GitLab rename that names only the new last element is placed beside
// the old path: from "from", else from the event's repository.
func TestGitLabRenameShortForm(t *testing.T) {
	ev := func(repo, from, to string) distributionEvent {
		var e distributionEvent
		e.Action = "rename"
		e.Target.Repository = repo
		e.Target.Rename = &struct {
			Type string `json:"type"`
			From string `json:"from"`
			To   string `json:"to"`
		}{Type: "repository", From: from, To: to}
		return e
	}
	for _, tc := range []struct {
		e    distributionEvent
		want string
	}{
		{ev("group/sub/old", "", "new"), "group/sub/new"},
		{ev("ignored/x", "group/old", "new"), "group/new"},
		{ev("group/old", "", "other/new"), "other/new"},
	} {
		p, err := renamed(tc.e)
		if err != nil || p.Repository != tc.want {
			t.Errorf("%+v: %+v %v, want %s", tc.e.Target.Rename, p, err, tc.want)
		}
	}
}
