package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMistakesStopTheStartNamingThem: each first-hour mistake ends the
// start with exit code 2 and a message saying what to change.
func TestMistakesStopTheStartNamingThem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no such store", []string{"--store", filepath.Join(dir, "typo")}, "is not a directory"},
		{"store is a file", []string{"--store", filepath.Join(dir, "..", filepath.Base(dir), "f")}, "is not a directory"},
		{"two stores", []string{"--store", dir, "--s3-bucket", "b"}, "choose one"},
		{"profile without a certificate", []string{"--store", dir, "--tls-profile", "modern"}, "give --tls-cert-file"},
		{"unknown profile", []string{"--store", dir, "--tls-profile", "loose"}, "--tls-profile loose"},
		{"a sync flag", []string{"--store", dir, "--platform", "linux/arm64"}, "unknown flag --platform"},
		{"a bad byte count", []string{"--store", dir, "--graphql-max-answer", "lots"}, "--graphql-max-answer"},
		{"a negative duration", []string{"--store", dir, "--shutdown-grace=-1s"}, "must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "store is a file" {
				if err := writeFile(file); err != nil {
					t.Fatal(err)
				}
			}
			var stderr bytes.Buffer
			code := run(context.Background(), append(c.args, "--addr", "127.0.0.1:0"), &bytes.Buffer{}, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, c.want, stderr.String())
			}
		})
	}
}

// TestHelpListsOnlyWhatAReaderTakes: -h exits 0 and lists the store,
// serving and TLS settings, none of a sync's.
func TestHelpListsOnlyWhatAReaderTakes(t *testing.T) {
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--store", "--s3-bucket", "--addr", "--tls-cert-file", "--graphql-max-answer", "--log-level", "CATALOGSYNC_STORE"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %s", want)
		}
	}
	for _, not := range []string{"--platform", "--s3-upload-concurrency", "--tmp-dir", "--ui-open", "--config"} {
		if strings.Contains(stdout.String(), "\n  "+not) {
			t.Errorf("help lists %s, which a reader does not take", not)
		}
	}
}

func writeFile(p string) error { return os.WriteFile(p, []byte("x"), 0o600) }
