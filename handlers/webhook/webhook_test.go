package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The 415 answer names the content type that was sent, or "none".
func TestRequireMediaTypeNamesIt(t *testing.T) {
	for ct, want := range map[string]string{"": `"none"`, "text/plain": `"text/plain"`} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := requireMediaType(r, "application/json")
		if !errors.Is(err, ErrUnsupportedMediaType) || !strings.Contains(err.Error(), want) {
			t.Errorf("content type %q: %v, want it named %s", ct, err, want)
		}
	}
}

// A header that is neither the secret nor "Bearer <secret>" is forbidden,
// also when it ends with the secret; a short one does not panic.
func TestAuthenticateHeaderOtherSchemes(t *testing.T) {
	const secret = "s3cret-value"
	for _, v := range []string{"Token: " + secret, "Basic  " + secret, "abc", "Bearer", "bearer x"} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", nil)
		r.Header.Set("Authorization", v)
		if err := AuthenticateHeader(r, "Authorization", secret); !errors.Is(err, ErrForbidden) {
			t.Errorf("%q: %v, want forbidden", v, err)
		}
	}
}

// A repository name of exactly the 255-byte limit is kept, one byte more
// is malformed, and a bracketed host that is no IPv6 literal names no
// registry.
func TestNormalizeLimits(t *testing.T) {
	name := func(n int) string { return "acme/" + strings.Repeat("a", n-len("acme/")) }
	if _, err := normalize(Push{Host: "registry.example.test", Repository: name(maxRepoLen)}); err != nil {
		t.Errorf("%d bytes: %v", maxRepoLen, err)
	}
	if _, err := normalize(Push{Host: "registry.example.test", Repository: name(maxRepoLen + 1)}); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d bytes: %v, want malformed", maxRepoLen+1, err)
	}
	if _, err := normalize(Push{Host: "[1.2.3.4]", Repository: "acme/cat"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("host [1.2.3.4]: %v, want malformed", err)
	}
}

// A reported manifest media type of up to 255 bytes is kept, parameters
// (spaces) included; a longer one, or one with control characters, is
// dropped.
func TestNormalizeMediaType(t *testing.T) {
	long := "application/" + strings.Repeat("x", 255-len("application/"))
	for mt, want := range map[string]string{
		long:       long,
		long + "x": "",
		"application/vnd.oci.image.index.v1+json; charset=utf-8": "application/vnd.oci.image.index.v1+json; charset=utf-8",
		"application/json\x1f": "",
		"application/json\x7f": "",
	} {
		p, err := normalize(Push{Repository: "acme/cat", MediaType: mt})
		if err != nil || p.MediaType != want {
			t.Errorf("media type %q: %q %v, want %q", mt, p.MediaType, err, want)
		}
	}
}

// The registry host of a resource URL is found with a scheme (even an
// empty one) and for localhost, and never taken from a Docker Hub
// "namespace/name" or a bare single-name image.
func TestHostOfForms(t *testing.T) {
	for in, want := range map[string]string{
		"://registry.example.test/acme/cat":        "registry.example.test",
		"https://registry.example.test/acme/cat":   "registry.example.test",
		" registry.example.test:5000/acme/cat:v1 ": "registry.example.test:5000",
		"localhost/acme/cat":                       "localhost",
		"acme/cat:v1":                              "",
		"registry.example.test":                    "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}
