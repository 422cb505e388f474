package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccessFlags: trust, mirror and pull secret settings that cannot be
// used stop the command with a message naming the setting.
func TestAccessFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o644)
	badConf := filepath.Join(dir, "registries.conf")
	os.WriteFile(badConf, []byte("[[registry]]\nblocked = true\n"), 0o644)
	image := "ocidir://" + filepath.Join(dir, "none") + ":v1"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sync", "--name", "x", "--image", image, "--store", dir, "--ca-file", filepath.Join(dir, "missing.pem")}, 1, "registry CA bundle"},
		{[]string{"sync", "--name", "x", "--image", image, "--store", dir, "--ca-file", notPEM}, 1, "no PEM certificate"},
		{[]string{"sync", "--name", "x", "--image", image, "--store", dir, "--ca-dir", filepath.Join(dir, "nodir")}, 1, "registry CA bundle"},
		{[]string{"sync", "--name", "x", "--image", image, "--store", dir, "--registries-conf", badConf}, 1, "--registries-conf"},
		{[]string{"sync", "--name", "x", "--image", image, "--store", dir, "--registries-conf", filepath.Join(dir, "missing.conf")}, 1, "--registries-conf"},
		{[]string{"serve", "--store", dir, "--addr", "127.0.0.1:0", "--pull-secret", "no-namespace"}, 2, "--pull-secret"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}
