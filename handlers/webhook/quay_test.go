package webhook

import (
	"errors"
	"testing"
)

// A Quay notification that is no repo_push (a build, a security report)
// is ignored: not malformed, and a build's tags trigger no sync.
func TestQuayNotPush(t *testing.T) {
	q := newQuay(ReceiverConfig{})
	build := loadFixture(t, "quay-build-success")
	for _, body := range []string{
		string(build.body),
		`{"repository":"acme/cat"}`,
		`{"repository":"acme/cat","updated_tags":null}`,
		`{"repository":"acme/cat","build_id":"b1","updated_tags":["v1"]}`,
	} {
		if ps, err := q.Parse(jsonRequest(body), []byte(body)); !errors.Is(err, ErrIgnored) {
			t.Errorf("%.60s: %+v %v, want ignored", body, ps, err)
		}
	}
}
