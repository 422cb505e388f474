package source

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestLocalSources: a missing OCI layout is terminal (it will not appear
// by retrying), and with local sources off no ocidir:// reference, tag or
// digest, is read at all.
func TestLocalSources(t *testing.T) {
	ctx := context.Background()
	sample, err := filepath.Abs("../../examples/sample-catalog")
	if err != nil {
		t.Fatal(err)
	}
	on, err := New(WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	res, err := on.Resolve(ctx, "ocidir://"+sample+":v1")
	if err != nil {
		t.Fatalf("local sources on: %v", err)
	}
	_, err = on.Resolve(ctx, "ocidir://"+filepath.Join(t.TempDir(), "missing")+":v1")
	if !errors.Is(err, ErrLocalMissing) || Retryable(err) {
		t.Fatalf("missing layout: %v (retryable %v)", err, Retryable(err))
	}
	off, err := New(WithDockerConfig(false), WithLocalSources(false))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	for _, image := range []string{"ocidir://" + sample + ":v1", "ocidir://" + sample + "@" + res.Digest, "ocidir:///etc:v1"} {
		if _, err := off.Resolve(ctx, image); !errors.Is(err, ErrLocalRefused) || Retryable(err) {
			t.Errorf("%s with local sources off: %v", image, err)
		}
	}
}
