package webhook

import (
	"errors"
	"testing"
)

// A Nexus signature is the MAC and nothing more: trailing junk after the
// right MAC, or a short one, is forbidden (the hex would decode with an
// error but 20 bytes).
func TestNexusSignatureTrailingJunk(t *testing.T) {
	const secret = "hook-test-secret"
	body := []byte(`{"action":"CREATED"}`)
	good := SignSHA1(secret, body)
	for _, sig := range []string{good + "0", good + "zz", good + "00", good[:38]} {
		r := jsonRequest(string(body), nexusSignatureHeader, sig)
		if err := (&nexus{}).Authenticate(r, body, secret); !errors.Is(err, ErrForbidden) {
			t.Errorf("signature %q: %v, want forbidden", sig, err)
		}
	}
	if err := (&nexus{}).Authenticate(jsonRequest(string(body), nexusSignatureHeader, good), body, secret); err != nil {
		t.Errorf("good signature: %v", err)
	}
}

// Nexus events missing repositoryName or asset are refused as malformed
// (not accepted, no panic).
func TestNexusMalformed(t *testing.T) {
	n := newNexus(ReceiverConfig{Host: "nexus.example.test:8443"})
	for body, kind := range map[string]string{
		`{"action":"CREATED","component":{"format":"docker","name":"acme/cat","version":"v1"}}`: "rm:repository:component",
		`{"repositoryName":"docker-hosted","action":"CREATED"}`:                                 "rm:repository:asset",
		`{"repositoryName":"docker-hosted","action":"CREATED","asset":{"format":"docker"}}`:     "rm:repository:asset",
	} {
		if _, err := n.Parse(jsonRequest(body, nexusEventHeader, kind), []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", body, err)
		}
	}
}

// A Nexus asset that is no manifest under v2/ is ignored: it triggers no
// sync.
func TestNexusAssetNotManifest(t *testing.T) {
	n := newNexus(ReceiverConfig{Host: "nexus.example.test:8443"})
	for _, name := range []string{"acme/cat/manifests/v1", "v2//manifests/v1", "v2/acme/cat/manifests/", "v2/acme/cat/tags/list"} {
		body := `{"repositoryName":"docker-hosted","action":"CREATED","asset":{"format":"docker","name":"` + name + `"}}`
		if ps, err := n.Parse(jsonRequest(body, nexusEventHeader, "rm:repository:asset"), []byte(body)); !errors.Is(err, ErrIgnored) {
			t.Errorf("asset %s: %+v %v, want ignored", name, ps, err)
		}
	}
}
