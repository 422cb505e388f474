package deploy_test

import (
	"slices"
	"strings"
	"testing"
)

// workloadOf decodes the catalogsync Deployment or Knative Service of a
// rendered overlay.
func workloadOf(t *testing.T, name string, objs []object) workload {
	t.Helper()
	if o, ok := find(objs, "Deployment", "catalogsync"); ok {
		var d deployment
		decodeStrict(t, o, &d)
		ps := d.Spec.Template.Spec
		return workload{overlay: name, serviceAccountName: ps.ServiceAccountName, container: ps.Containers[0], volumes: ps.Volumes, podSecurity: ps.SecurityContext}
	}
	for _, o := range objs {
		if o.kind() == "Service" && o.isKnative() {
			var s knService
			decodeStrict(t, o, &s)
			rs := s.Spec.Template.Spec
			return workload{overlay: name, serviceAccountName: rs.ServiceAccountName, container: rs.Containers[0], volumes: rs.Volumes}
		}
	}
	t.Fatalf("%s renders no catalogsync Deployment or Knative Service", name)
	return workload{}
}

// TestEveryWorkload runs the workload checks (flags and env serve knows,
// config mounted, every env:NAME set from a rendered Secret key, probes,
// security, a store that is not the root filesystem) on every overlay and
// documented composition: components add to a workload without breaking
// what another added.
func TestEveryWorkload(t *testing.T) {
	for _, o := range overlays {
		t.Run(o, func(t *testing.T) {
			objs := render(t, o)
			checkWorkload(t, objs, workloadOf(t, o, objs))
		})
	}
	for _, c := range combos {
		t.Run(c.String(), func(t *testing.T) {
			objs := renderCombo(t, c)
			w := workloadOf(t, c.String(), objs)
			checkWorkload(t, objs, w)
			env := containerEnv(t, objs, w.container)
			if slices.Contains(c.components, "webhooks") {
				for _, n := range []string{"REGISTRY_HOOK_SECRET", "CI_HOOK_SECRET", "AWS_ACCESS_KEY_ID"} {
					if _, ok := env[n]; !ok {
						t.Errorf("%s: env %s lost", c, n)
					}
				}
				if _, ok := serveConfig(t, objs)["events"]; !ok {
					t.Errorf("%s: components/webhooks dropped the events endpoint", c)
				}
			}
		})
	}
}

// TestQuickstart: deploy/quickstart applies as it is: one pod, the store
// on a PersistentVolumeClaim, nothing to fill in (no Secret, no S3, no
// env:NAME in the config, no webhooks or events), and a sample
// ClusterCatalog beside it (the apiserver test dry-runs it).
func TestQuickstart(t *testing.T) {
	objs := render(t, "quickstart")
	o, _ := find(objs, "Deployment", "catalogsync")
	var d deployment
	decodeStrict(t, o, &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("replicas %v strategy %q, want 1 and Recreate (a ReadWriteOnce volume)", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	for _, o := range objs {
		if o.kind() == "Secret" {
			t.Errorf("quickstart renders %s: nothing should need filling in", o)
		}
	}
	w := workloadOf(t, "quickstart", objs)
	for name := range containerEnv(t, objs, w.container) {
		if strings.HasPrefix(name, "CATALOGSYNC_S3_") || strings.HasPrefix(name, "AWS_") {
			t.Errorf("quickstart sets %s", name)
		}
	}
	raw := configMapData(t, objs, "catalogsync")["catalogsync.yaml"]
	cfg := serveConfig(t, objs)
	if envRef.MatchString(raw) || cfg["webhooks"] != nil || cfg["events"] != nil {
		t.Errorf("quickstart's config needs secrets or has triggers:\n%s", raw)
	}
	sample := readObjects(t, deployDir(t)+"/quickstart/clustercatalog.yaml")
	if len(sample) != 1 || sample[0].kind() != "ClusterCatalog" {
		t.Fatalf("quickstart/clustercatalog.yaml: %v", sample)
	}
	if _, ok := find(objs, "ClusterCatalog", sample[0].name()); ok {
		t.Error("the sample ClusterCatalog is part of the overlay; it is applied on its own")
	}
}
