package deploy_test

import (
	"os/exec"
	"slices"
	"testing"

	"github.com/catalogsync/catalogsync/test/servers"
)

// TestReaderOverlay: deploy/reader is a Knative Service running
// catalogsync-reader from the catalogsync image, scaled from zero, with
// only settings the reader takes (its -h lists them), read-only keys from
// a Secret template, both probes and a locked-down container.
func TestReaderOverlay(t *testing.T) {
	objs := render(t, readerDir)
	o, ok := find(objs, "Service", "catalogsync-reader")
	if !ok || !o.isKnative() {
		t.Fatal("deploy/reader renders no Knative Service catalogsync-reader")
	}
	var s knService
	decodeStrict(t, o, &s)
	if got := s.Spec.Template.Metadata.Annotations["autoscaling.knative.dev/min-scale"]; got != "0" {
		t.Errorf("min-scale %q: the reader exists to scale from zero", got)
	}
	c := s.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/usr/local/bin/catalogsync-reader"}) || len(c.Args) != 0 {
		t.Errorf("command %q args %q, want catalogsync-reader's path and no args", c.Command, c.Args)
	}
	help, _ := exec.Command(servers.ReaderBinary(t), "-h").Output()
	known := map[string]bool{}
	for _, n := range envName.FindAllString(string(help), -1) {
		known[n] = true
	}
	if !known["CATALOGSYNC_S3_BUCKET"] {
		t.Fatalf("catalogsync-reader -h lists no CATALOGSYNC_S3_BUCKET:\n%s", help)
	}
	env := containerEnv(t, objs, c)
	for name := range env {
		if !known[name] && envFromElsewhere[name] == "" {
			t.Errorf("env %s is neither in `catalogsync-reader -h` nor a known runtime/SDK variable", name)
		}
	}
	for _, n := range []string{"CATALOGSYNC_S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if _, ok := env[n]; !ok {
			t.Errorf("env %s is not set", n)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("readiness probe is not GET /readyz")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("liveness probe is not GET /healthz")
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container security context %+v: want a read-only root filesystem, non-root", sc)
	}
}
