package source

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func TestParseRetryAfter(t *testing.T) {
	cases := map[string]time.Duration{
		"":         0,
		"30":       30 * time.Second,
		" 2 ":      2 * time.Second,
		"-5":       0,
		"garbage":  0,
		"99999999": time.Hour,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	if got := parseRetryAfter(future); got < 80*time.Second || got > 91*time.Second {
		t.Errorf("HTTP date: %v", got)
	}
}

func TestDecompress(t *testing.T) {
	plain := []byte("plain tar bytes, not really a tar")
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(plain)
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write(plain)
	zw.Close()

	cases := []struct {
		name, mt string
		data     []byte
		err      bool
	}{
		{"gzip", "application/vnd.oci.image.layer.v1.tar+gzip", gz.Bytes(), false},
		{"docker gzip", "application/vnd.docker.image.rootfs.diff.tar.gzip", gz.Bytes(), false},
		{"zstd", "application/vnd.oci.image.layer.v1.tar+zstd", zs.Bytes(), false},
		{"plain", "application/vnd.oci.image.layer.v1.tar", plain, false},
		{"gzip labelled tar", "application/vnd.oci.image.layer.v1.tar", gz.Bytes(), false},
		{"octet-stream zstd", "application/octet-stream", zs.Bytes(), false},
		{"plain labelled gzip", "application/vnd.oci.image.layer.v1.tar+gzip", plain, true},
		{"zstd labelled gzip", "application/vnd.oci.image.layer.v1.tar+gzip", zs.Bytes(), true},
		{"gzip labelled zstd", "application/vnd.oci.image.layer.v1.tar+zstd", gz.Bytes(), true},
	}
	for _, c := range cases {
		rc, err := Decompress(c.mt, bytes.NewReader(c.data))
		if c.err {
			if !errors.Is(err, ErrCompression) {
				t.Errorf("%s: err = %v, want ErrCompression", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: got %q, %v", c.name, got, err)
		}
	}
}

func TestRetryable(t *testing.T) {
	if Retryable(ErrInvalidRef) || Retryable(ErrNotImage) || Retryable(nil) {
		t.Error("bad references and non-images are terminal")
	}
	if !Retryable(&RegistryError{Op: "get", Err: io.ErrUnexpectedEOF}) {
		t.Error("transport errors are retryable")
	}
	if RetryAfter(&RegistryError{RetryAfter: 3 * time.Second}) != 3*time.Second {
		t.Error("RetryAfter lost")
	}
}

func TestParseRef(t *testing.T) {
	for _, bad := range []string{"", " x", "UPPER/Case:tag", "a b"} {
		if _, err := ParseRef(bad); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("ParseRef(%q) = %v", bad, err)
		}
	}
	res, ok, err := Pin("example.test/repo@sha256:" + string(bytes.Repeat([]byte("a"), 64)))
	if err != nil || !ok || !res.Pinned || res.Digest[:7] != "sha256:" {
		t.Fatalf("Pin: %+v %v %v", res, ok, err)
	}
	if _, ok, _ := Pin("example.test/repo:v1"); ok {
		t.Fatal("a tag is not pinned")
	}
	for _, bad := range []string{"nonsense", "", "/amd64"} {
		if _, err := New(WithPlatform(bad)); err == nil {
			t.Errorf("platform %q accepted", bad)
		}
	}
}
