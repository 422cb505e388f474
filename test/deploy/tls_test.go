package deploy_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTLSOverlays: both TLS overlays serve HTTPS from the Secret their
// certificate source writes, probe over HTTPS and report an https base
// URL; cert-manager's certificate comes from the issuer operator-controller
// trusts, OpenShift's from the service CA annotation.
func TestTLSOverlays(t *testing.T) {
	for _, overlay := range []string{"tls-cert-manager", "tls-openshift"} {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			dep, ok := find(objs, "Deployment", "catalogsync")
			if !ok {
				t.Fatal("no Deployment")
			}
			raw, _ := json.Marshal(dep.fields)
			for _, want := range []string{
				`"name":"CATALOGSYNC_TLS_CERT_FILE","value":"/var/certs/tls.crt"`,
				`"name":"CATALOGSYNC_TLS_KEY_FILE","value":"/var/certs/tls.key"`,
				`"mountPath":"/var/certs"`, `"secretName":"catalogsync-service-cert"`, `"scheme":"HTTPS"`,
				`"name":"AWS_ACCESS_KEY_ID"`, // components/s3's env is kept
			} {
				if !strings.Contains(string(raw), want) {
					t.Errorf("Deployment lacks %s", want)
				}
			}
			cm, _ := find(objs, "ConfigMap", "catalogsync-env")
			if data, _ := cm.fields["data"].(map[string]any); !strings.HasPrefix(data["CATALOGSYNC_BASE_URL"].(string), "https://catalogsync.catalogsync-system.svc") {
				t.Errorf("base URL %v", data["CATALOGSYNC_BASE_URL"])
			}
			svc, _ := find(objs, "Service", "catalogsync")
			sraw, _ := json.Marshal(svc.fields)
			var s service
			decodeStrict(t, svc, &s)
			// One port: a second one named http (the plain port kept
			// beside 443) makes the apiserver refuse the Service.
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 443 {
				t.Errorf("Service ports %+v, want only 443", s.Spec.Ports)
			}
			switch overlay {
			case "tls-cert-manager":
				c, ok := find(objs, "Certificate", "catalogsync-service-cert")
				craw, _ := json.Marshal(c.fields)
				if !ok || !strings.Contains(string(craw), `"kind":"ClusterIssuer","name":"olmv1-ca"`) || !strings.Contains(string(craw), `"secretName":"catalogsync-service-cert"`) {
					t.Errorf("Certificate: %s", craw)
				}
			case "tls-openshift":
				if !strings.Contains(string(sraw), `"service.beta.openshift.io/serving-cert-secret-name":"catalogsync-service-cert"`) {
					t.Errorf("Service lacks the serving-cert annotation: %s", sraw)
				}
			}
		})
	}
}

// TestKnativeTLSOverlay: the Knative Service is cluster-local (Knative
// terminates TLS for its cluster-local name when cluster-local-domain-tls
// is on) and the reported base URL is https://, the rest of knative/
// unchanged.
func TestKnativeTLSOverlay(t *testing.T) {
	objs := render(t, "knative-tls")
	var svc *knService
	for _, o := range objs {
		if o.kind() == "Service" && o.isKnative() {
			svc = new(knService)
			decodeStrict(t, o, svc)
		}
	}
	if svc == nil {
		t.Fatal("no Knative Service")
	}
	if v := svc.Metadata.Labels["networking.knative.dev/visibility"]; v != "cluster-local" {
		t.Errorf("visibility label %q, want cluster-local", v)
	}
	if u := configMapData(t, objs, "catalogsync-env")["CATALOGSYNC_BASE_URL"]; u != "https://catalogsync.catalogsync-system.svc.cluster.local" {
		t.Errorf("base URL %q", u)
	}
	if got, want := len(objs), len(render(t, knativeDir)); got != want {
		t.Errorf("knative-tls renders %d objects, knative %d", got, want)
	}
}
