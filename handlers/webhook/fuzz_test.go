package webhook

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Fuzz targets: each sender's parser gets arbitrary bodies and, in the
// header that steers it (content type, event name, CloudEvent type),
// arbitrary values. Seeds are in testdata/fuzz/<target>, written from the
// fixtures in testdata/webhooks. Whatever comes in, a parser must not
// panic, must classify every error (so the receiver answers 4xx or 202,
// never 500), and must only return pushes the matcher can trust.

// fuzzParse builds the request from a fixture's headers, with header
// steer set to the fuzzed value, and checks the parser's contract.
func fuzzParse(t *testing.T, src Sender, base http.Header, steer, value string, body []byte) {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	for k, vs := range base {
		r.Header[k] = vs
	}
	if steer != "" {
		r.Header.Set(steer, value)
	}
	if idr, ok := src.(Identified); ok {
		idr.DeliveryIDs(r, body)
	}
	pushes, err := src.Parse(r, body)
	if err != nil {
		if pushes != nil {
			t.Fatalf("pushes %v returned with error %v", pushes, err)
		}
		for _, known := range []error{ErrMalformed, ErrIgnored, ErrUnsupportedMediaType, ErrPing} {
			if errors.Is(err, known) {
				return
			}
		}
		t.Fatalf("unclassified error %v", err)
	}
	if len(pushes) == 0 {
		t.Fatal("no pushes and no error")
	}
	for _, p := range pushes {
		n, err := normalize(p)
		if err != nil || n != p {
			t.Fatalf("push %+v is not normalized (%+v, %v)", p, n, err)
		}
	}
}

// fuzzHeaders returns a fixture's headers for a fuzz target's base request.
func fuzzHeaders(t testing.TB, fixture string) http.Header {
	return loadFixture(t, fixture).header
}

func FuzzDistribution(f *testing.F) {
	src := newDistribution(ReceiverConfig{})
	base := fuzzHeaders(f, "distribution-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzGitLab(f *testing.F) {
	src := newGitLab(ReceiverConfig{})
	base := fuzzHeaders(f, "gitlab-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzHarbor(f *testing.F) {
	src := newHarbor(ReceiverConfig{})
	base := fuzzHeaders(f, "harbor-push-artifact")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzQuay(f *testing.F) {
	src := newQuay(ReceiverConfig{})
	base := fuzzHeaders(f, "quay-repo_push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzDockerHub(f *testing.F) {
	src := newDockerHub(ReceiverConfig{})
	base := fuzzHeaders(f, "dockerhub-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzGitHub(f *testing.F) {
	src := newGitHub(ReceiverConfig{})
	base := fuzzHeaders(f, "github-package-published")
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		fuzzParse(t, src, base, "X-GitHub-Event", event, body)
	})
}

func FuzzZot(f *testing.F) {
	src := newZot(ReceiverConfig{})
	base := fuzzHeaders(f, "zot-image-updated")
	f.Fuzz(func(t *testing.T, ceType string, body []byte) {
		fuzzParse(t, src, base, "Ce-Type", ceType, body)
	})
}

func FuzzACR(f *testing.F) {
	src := newACR(ReceiverConfig{})
	base := fuzzHeaders(f, "acr-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzEventGrid(f *testing.F) {
	src := newEventGrid(ReceiverConfig{})
	base := fuzzHeaders(f, "eventgrid-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzArtifactory(f *testing.F) {
	src := newArtifactory(ReceiverConfig{})
	base := fuzzHeaders(f, "artifactory-pushed")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzGeneric(f *testing.F) {
	src := newGeneric(ReceiverConfig{})
	base := fuzzHeaders(f, "generic-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

// FuzzSignature checks the HMAC check against arbitrary signatures and
// bodies: only the true signature of the body passes.
func FuzzSignature(f *testing.F) {
	a := signatureAuth{header: "X-Signature-256"}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("X-Signature-256", sig)
		err := a.Authenticate(r, body, "hook-test-secret")
		// Hex is case-insensitive; nothing else may vary.
		rest, ok := strings.CutPrefix(sig, "sha256=")
		genuine := ok && strings.EqualFold(rest, strings.TrimPrefix(Sign("hook-test-secret", body), "sha256="))
		if (err == nil) != genuine {
			t.Fatalf("signature %q accepted=%v, genuine=%v", sig, err == nil, genuine)
		}
		if err != nil && !errors.Is(err, ErrUnauthenticated) && !errors.Is(err, ErrForbidden) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func FuzzGAR(f *testing.F) {
	src := &gar{}
	base := fuzzHeaders(f, "gar-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzNexus(f *testing.F) {
	src := newNexus(ReceiverConfig{Host: "nexus.example.test"})
	base := fuzzHeaders(f, "nexus-component-created")
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		fuzzParse(t, src, base, "X-Nexus-Webhook-Id", event, body)
	})
}

func FuzzECR(f *testing.F) {
	src := newECR(ReceiverConfig{})
	base := fuzzHeaders(f, "ecr-push")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}

func FuzzCDEvents(f *testing.F) {
	src := newCDEvents(ReceiverConfig{})
	base := fuzzHeaders(f, "cdevents-artifact-published")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		fuzzParse(t, src, base, "Content-Type", contentType, body)
	})
}
