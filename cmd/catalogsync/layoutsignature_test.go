package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regclient/regclient"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// serve with a catalog read from an OCI layout (ocidir://) that has keys
// of its own: the signed image is published with what verified it; an
// unsigned one pushed to the same tag fails terminally and the signed
// catalog stays served.
func TestServeVerifiesLayoutSignature(t *testing.T) {
	t.Parallel()
	key, pub := cosignKey(t)
	layout := "ocidir://" + filepath.Join(t.TempDir(), "catalog")
	rc := regclient.New()
	push := func(variant string) string { return pushLayout(t, rc, layout, variant) }
	good := push("signed")
	if err := imagebuild.CosignSign(context.Background(), rc, layout, key, good, good); err != nil {
		t.Fatal(err)
	}
	cfg := writeServeConfig(t, fmt.Sprintf("catalogs:\n- name: local\n  image: %s:v1\n  signature: {keys: [%s]}\n", layout, pub))
	s := startServe(t, "--config", cfg, "--store", t.TempDir(), "--api-open")

	v, body := settledCatalog(t, s.addr, "local", "Succeeded")
	if v.Published == nil || v.Published.Digest != good || !strings.Contains(v.Published.VerifiedBy, "cosign key "+pub) {
		t.Fatalf("signed layout: %s", body)
	}
	push("unsigned")
	if code, b := do(t, "POST", "http://"+s.addr+"/api/v1/catalogs/local/sync", "", nil); code != 202 {
		t.Fatalf("sync: %d %s", code, b)
	}
	v, body = settledCatalog(t, s.addr, "local", "Failed")
	if e := v.LastSync.Error; e == nil || e.Reason != "SignatureInvalid" || e.Retryable || !strings.Contains(e.Message, "not signed") {
		t.Fatalf("unsigned layout: %s", body)
	}
	if v.Published == nil || v.Published.Digest != good || !v.NextRetry.IsZero() {
		t.Fatalf("after the unsigned image: %s", body)
	}
}

// A layout published before its catalog had a requirement (or before
// layouts were verified) is not taken as up to date once the requirement
// applies: unsigned, the sync fails (the content stays served); once
// signed, the sync succeeds with what verified it.
func TestServeVerifiesLayoutPublishedBeforeItsPolicy(t *testing.T) {
	t.Parallel()
	key, pub := cosignKey(t)
	layout := "ocidir://" + filepath.Join(t.TempDir(), "catalog")
	rc := regclient.New()
	d := pushLayout(t, rc, layout, "old")
	store := t.TempDir()
	plain := writeServeConfig(t, fmt.Sprintf("catalogs:\n- name: local\n  image: %s:v1\n", layout))
	s := startServe(t, "--config", plain, "--store", store, "--api-open")
	if v, body := settledCatalog(t, s.addr, "local", "Succeeded"); v.Published == nil || v.Published.Digest != d || v.Published.VerifiedBy != "" {
		t.Fatalf("without a policy: %s", body)
	}
	s.stop()
	s.code <- <-s.code // stopped; its cleanup reads the code again

	strict := writeServeConfig(t, fmt.Sprintf("catalogs:\n- name: local\n  image: %s:v1\n  signature: {keys: [%s]}\n", layout, pub))
	s = startServe(t, "--config", strict, "--store", store, "--api-open")
	if code, b := do(t, "POST", "http://"+s.addr+"/api/v1/catalogs/local/sync", "", nil); code != 202 {
		t.Fatalf("sync: %d %s", code, b)
	}
	v, body := settledCatalog(t, s.addr, "local", "Failed")
	if e := v.LastSync.Error; e == nil || e.Reason != "SignatureInvalid" || v.Published == nil || v.Published.Digest != d {
		t.Fatalf("unsigned, published before the policy: %s", body)
	}
	if err := imagebuild.CosignSign(context.Background(), rc, layout, key, d, d); err != nil {
		t.Fatal(err)
	}
	if code, b := do(t, "POST", "http://"+s.addr+"/api/v1/catalogs/local/sync", "", nil); code != 202 {
		t.Fatalf("sync: %d %s", code, b)
	}
	v, body = settledCatalog(t, s.addr, "local", "Succeeded")
	if v.Published == nil || v.Published.Digest != d || v.LastSync.Result == nil || !strings.Contains(v.LastSync.Result.VerifiedBy, "cosign key "+pub) {
		t.Fatalf("signed afterwards: %s", body)
	}
	// The published pointer records the verification, so the catalog's
	// state (and its Serving status) says it was verified, and later
	// polls need not check it again.
	if !strings.Contains(v.Published.VerifiedBy, "cosign key "+pub) {
		t.Fatalf("signed afterwards, the published pointer does not say so: %s", body)
	}
}

// cosignKey makes a signing key and writes its public half as PEM.
func cosignKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// pushLayout writes the tiny catalog, labelled variant, to layout:v1.
func pushLayout(t *testing.T, rc *regclient.RegClient, layout, variant string) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	img := imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs")
	img.Labels["test.catalogsync/variant"] = variant
	d, err := imagebuild.Push(context.Background(), rc, layout+":v1", img)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
