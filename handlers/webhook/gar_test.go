package webhook

import (
	"errors"
	"slices"
	"testing"
)

// Pub/Sub push ids come as messageId or message_id (messageId wins),
// unique per subscription.
func TestGARDeliveryIDs(t *testing.T) {
	g := &gar{}
	for body, want := range map[string][]string{
		`{"message":{"messageId":"a","message_id":"b"},"subscription":"s"}`: {"s#a"},
		`{"message":{"message_id":"b"},"subscription":"s"}`:                 {"s#b"},
		// Without an id a push has no delivery id, so it is not taken for
		// a redelivery of another id-less push.
		`{"message":{"data":""},"subscription":"s"}`: nil,
		`{"subscription":"s"}`:                       nil,
		`not json`:                                   nil,
	} {
		if got := g.DeliveryIDs(nil, []byte(body)); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// Artifact Registry names: a digest name and a tag name of one image give
// one push with both; names of two images, or not registry names, are
// malformed.
func TestGARPush(t *testing.T) {
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	ps, err := garPush("europe-docker.pkg.example.test/p/r/cat@"+d, "europe-docker.pkg.example.test/p/r/cat:v1")
	if err != nil || len(ps) != 1 || ps[0].Digest != d || ps[0].Tag != "v1" || ps[0].Repository != "p/r/cat" {
		t.Fatalf("digest and tag: %+v %v", ps, err)
	}
	ps, err = garPush("europe-docker.pkg.example.test/p/r/cat@"+d, "")
	if err != nil || len(ps) != 1 || ps[0].Digest != d || ps[0].Tag != "" {
		t.Fatalf("digest only: %+v %v", ps, err)
	}
	for _, names := range [][2]string{
		{"europe-docker.pkg.example.test/p/r/cat@" + d, "europe-docker.pkg.example.test/p/r/other:v1"},
		{"ocidir://cat", ""},
		{"", "Not A Name"},
	} {
		if _, err := garPush(names[0], names[1]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want malformed", names, err)
		}
	}
}
