package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
)

// A layer's bytes depend only on its entries and time: rebuilding the
// same checkout gives the same digests.
func TestWriteLayerIsDeterministic(t *testing.T) {
	bin := t.TempDir()
	for _, c := range commands {
		if err := os.WriteFile(filepath.Join(bin, c), []byte("binary "+c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mtime := time.Unix(1700000000, 0)
	var a, b bytes.Buffer
	da, ida, err := writeLayer(&a, appEntries(bin), mtime)
	if err != nil {
		t.Fatal(err)
	}
	db, idb, err := writeLayer(&b, appEntries(bin), mtime)
	if err != nil {
		t.Fatal(err)
	}
	if da.Digest != db.Digest || ida != idb || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two writes differ: %s %s", da.Digest, db.Digest)
	}
	if da.Digest != digest.FromBytes(a.Bytes()) || da.Size != int64(a.Len()) {
		t.Errorf("descriptor %v does not describe the blob", da)
	}
	gz, err := gzip.NewReader(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(gz)
	if got := digest.NewDigestFromBytes(digest.SHA256, sha256Sum(raw)); got != ida {
		t.Errorf("diff ID %s, uncompressed tar %s", ida, got)
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// The base layer: /tmp sticky and world-writable, the store owned by the
// non-root user, the users' files readable, all with the given time.
func TestBaseEntries(t *testing.T) {
	// testdata/ca.crt: a self-signed certificate.
	entries, err := baseEntries(filepath.Join("testdata", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mtime := time.Unix(1700000000, 0).UTC()
	if _, _, err := writeLayer(&buf, entries, mtime); err != nil {
		t.Fatal(err)
	}
	gz, _ := gzip.NewReader(&buf)
	tr := tar.NewReader(gz)
	got := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
	}
	if h := got["tmp/"]; h == nil || h.FileInfo().Mode()&(os.ModePerm|os.ModeSticky) != os.ModeSticky|0o777 {
		t.Errorf("tmp/: %+v", h)
	}
	if h := got["var/lib/catalogsync/"]; h == nil || h.Uid != userID || h.Gid != userID {
		t.Errorf("var/lib/catalogsync/: %+v", h)
	}
	if h := got["etc/passwd"]; h == nil || h.Mode != 0o644 || h.Uid != 0 {
		t.Errorf("etc/passwd: %+v", h)
	}
}

// A missing or empty CA bundle stops the build and says what to install.
func TestBaseEntriesRefusesABadCABundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := baseEntries(filepath.Join(dir, "none.crt")); err == nil || !strings.Contains(err.Error(), "ca-certificates") {
		t.Errorf("missing bundle: %v", err)
	}
	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := baseEntries(empty); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bundle without certificates: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--platform", "linux/amd64, linux/arm64", "--push", "r.example/x:v1"})
	if err != nil || len(o.platforms) != 2 || o.platforms[1] != "linux/arm64" || o.push != "r.example/x:v1" || o.oci != "dist/oci" {
		t.Errorf("parseFlags: %+v %v", o, err)
	}
	for _, bad := range [][]string{{"--platform", ","}, {"extra"}, {"--nope"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}
