package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// httpCase is one request to a receiver and what must come of it.
type httpCase struct {
	name    string
	fixture string            // testdata/webhooks/<fixture>.{json,headers.txt}
	body    []byte            // replaces the fixture's body when set
	header  map[string]string // sets headers; an empty value deletes
	resign  string            // header to re-sign after changing the body
	path    string            // replaces the receiver's path when set
	method  string            // default POST
	want    int
	trig    []string // catalogs triggered, sorted
}

// runCases sends each case to a fresh receiver (so delivery ids of one
// case do not make another a duplicate) as the named receiver's sender.
func runCases(t *testing.T, receiver string, cases []httpCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, rec := newTestReceiver(t)
			f := loadFixture(t, tc.fixture)
			if tc.body != nil {
				f.body = tc.body
			}
			path := pathOf(t, rc, receiver)
			if tc.path != "" {
				path = tc.path
			}
			req := f.request(path)
			if tc.method != "" {
				req.Method = tc.method
			}
			for k, v := range tc.header {
				if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			if tc.resign != "" {
				sig := Sign("hook-test-secret", f.body)
				if tc.resign == jfrogAuthHeader {
					sig = strings.TrimPrefix(sig, "sha256=")
				}
				req.Header.Set(tc.resign, sig)
			}
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d; body: %s", w.Code, tc.want, w.Body)
			}
			if got := rec.catalogs(); !slices.Equal(got, tc.trig) {
				t.Fatalf("triggered %v, want %v", got, tc.trig)
			}
		})
	}
}

// oversized is a body one byte over the default limit.
var oversized = bytes.Repeat([]byte("x"), DefaultMaxBodyBytes+1)

// commonCases are the failures every sender's receiver must handle: the
// fixture must be a valid push for the receiver.
func commonCases(fixture, authHeader string, signed bool) []httpCase {
	resign := ""
	if signed {
		resign = authHeader
	}
	cs := []httpCase{
		{name: "oversized body", fixture: fixture, body: oversized, resign: resign, want: http.StatusRequestEntityTooLarge},
		{name: "malformed JSON", fixture: fixture, body: []byte(`{"events": [`), resign: resign, want: http.StatusBadRequest},
		{name: "not JSON at all", fixture: fixture, body: []byte("hello"), resign: resign, want: http.StatusBadRequest},
		{name: "unsupported content type", fixture: fixture, header: map[string]string{"Content-Type": "text/plain"}, want: http.StatusUnsupportedMediaType},
		{name: "GET", fixture: fixture, method: http.MethodGet, want: http.StatusMethodNotAllowed},
	}
	if authHeader != "" {
		forged := "Bearer not-the-secret"
		if signed {
			forged = Sign("another-secret", []byte("{}"))
		}
		cs = append(cs,
			httpCase{name: "missing auth", fixture: fixture, header: map[string]string{authHeader: ""}, want: http.StatusUnauthorized},
			httpCase{name: "forged auth", fixture: fixture, header: map[string]string{authHeader: forged}, want: http.StatusForbidden},
		)
	}
	return cs
}

func TestDistribution(t *testing.T) {
	cases := []httpCase{
		{name: "sample push, v2 envelope", fixture: "distribution-push", want: 202, trig: []string{"dist"}},
		{name: "secret without Bearer", fixture: "distribution-push", header: map[string]string{"Authorization": "3f6c1d0e9a8b7c6d5e4f"}, want: 202, trig: []string{"dist"}},
		{name: "secret with other case scheme", fixture: "distribution-push", header: map[string]string{"Authorization": "bearer 3f6c1d0e9a8b7c6d5e4f"}, want: 202, trig: []string{"dist"}},
		{name: "secret as prefix is forged", fixture: "distribution-push", header: map[string]string{"Authorization": "Bearer 3f6c1d0e9a8b7c6d5e4f0"}, want: 403},
		// Blob upload, mount, pull and delete are skipped; two pushes by
		// digest match tag catalogs of the repository and the pinned one.
		{name: "multi-event v1 envelope", fixture: "distribution-multi", want: 202, trig: []string{"dist-test", "dist-test-v1", "pinned"}},
		{name: "pulls, blob pushes, deletes and mounts only", fixture: "distribution-ignored", want: 202},
		{name: "empty envelope", fixture: "distribution-push", body: []byte(`{"events": []}`), want: 202},
		{name: "no events array", fixture: "distribution-push", body: []byte(`{"event": {}}`), want: 400},
		{name: "invalid repository", fixture: "distribution-push", body: []byte(`{"events":[{"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"Acme/../x","tag":"v1"},"request":{"host":"registry.example.test"}}]}`), want: 400},
		{name: "gitlab rename is not a distribution action", fixture: "gitlab-rename", header: map[string]string{"Authorization": "3f6c1d0e9a8b7c6d5e4f"}, want: 202},
		{name: "json is not the envelope type", fixture: "distribution-push", header: map[string]string{"Content-Type": "application/json"}, want: 415},
	}
	runCases(t, "dist", append(cases, commonCases("distribution-push", "Authorization", false)...))
}

func TestGitLab(t *testing.T) {
	cases := []httpCase{
		{name: "push", fixture: "gitlab-push", want: 202, trig: []string{"gitlab"}},
		{name: "rename announces the new path", fixture: "gitlab-rename", want: 202, trig: []string{"gitlab"}},
		{name: "delete", fixture: "gitlab-delete", want: 202},
		{name: "rename without target", fixture: "gitlab-push", body: []byte(`{"events":[{"action":"rename","target":{"repository":"acme/x"},"request":{"host":"registry.gitlab.example.test"}}]}`), want: 400},
		{name: "distribution secret is not gitlab's", fixture: "distribution-push", header: map[string]string{"Content-Type": DistributionEventsV1}, want: 403},
	}
	runCases(t, "gl", append(cases, commonCases("gitlab-push", "Authorization", false)...))
}

func TestHarbor(t *testing.T) {
	cases := []httpCase{
		{name: "sample push (default format)", fixture: "harbor-push-artifact", want: 202, trig: []string{"harbor"}},
		// The host is an alias of the catalog's; the tag is the digest.
		{name: "untagged push", fixture: "harbor-push-untagged", want: 202, trig: []string{"harbor"}},
		{name: "pull", fixture: "harbor-pull-artifact", want: 202},
		{name: "CloudEvents push", fixture: "harbor-cloudevents-push", want: 202, trig: []string{"harbor"}},
		{name: "CloudEvents delete", fixture: "harbor-cloudevents-deleted", want: 202},
		{name: "CloudEvents without id", fixture: "harbor-cloudevents-push", body: []byte(`{"specversion":"1.0","source":"/projects/3","type":"harbor.artifact.pushed","data":{}}`), want: 400},
		{name: "CloudEvents push without repository", fixture: "harbor-cloudevents-push", body: []byte(`{"specversion":"1.0","id":"1","source":"/projects/3","type":"harbor.artifact.pushed","datacontenttype":"application/json","data":{"resources":[{"tag":"v1"}]}}`), want: 400},
		{name: "no type", fixture: "harbor-push-artifact", body: []byte(`{"event_data":{}}`), want: 400},
		{name: "push without resources", fixture: "harbor-push-artifact", body: []byte(`{"type":"PUSH_ARTIFACT","event_data":{"repository":{"repo_full_name":"acme/operator-catalog"}}}`), want: 400},
		{name: "scan completed", fixture: "harbor-push-artifact", body: []byte(`{"type":"SCANNING_COMPLETED","event_data":{}}`), want: 202},
	}
	runCases(t, "harbor", append(cases, commonCases("harbor-push-artifact", "Authorization", false)...))
}

func TestQuay(t *testing.T) {
	cases := []httpCase{
		{name: "sample repo_push", fixture: "quay-repo_push", want: 202, trig: []string{"quay"}},
		{name: "legacy updated_tags object", fixture: "quay-repo_push-legacy", want: 202, trig: []string{"quay-legacy"}},
		{name: "build success", fixture: "quay-build-success", want: 202},
		{name: "no updated tags", fixture: "quay-repo_push", body: []byte(`{"repository":"acme/operator-catalog","docker_url":"quay.example.test/acme/operator-catalog","updated_tags":[]}`), want: 202},
		{name: "no repository", fixture: "quay-repo_push", body: []byte(`{"updated_tags":["v1"]}`), want: 400},
		{name: "tags of the wrong type", fixture: "quay-repo_push", body: []byte(`{"repository":"acme/operator-catalog","updated_tags":"v1"}`), want: 400},
		// Quay cannot authenticate: a path without the token is unknown.
		{name: "guessed path", fixture: "quay-repo_push", path: "/hooks/quay", want: 404},
		{name: "token of another receiver", fixture: "quay-repo_push", path: SecretPath("quay-path-token", "hub"), want: 404},
	}
	runCases(t, "quay", append(cases, commonCases("quay-repo_push", "", false)...))
}

func TestDockerHub(t *testing.T) {
	cases := []httpCase{
		{name: "sample push", fixture: "dockerhub-push", want: 202, trig: []string{"hub"}},
		{name: "other tag", fixture: "dockerhub-push", body: []byte(`{"push_data":{"tag":"v9"},"repository":{"repo_name":"acme/operator-catalog"}}`), want: 202},
		{name: "no push_data", fixture: "dockerhub-push", body: []byte(`{"repository":{"repo_name":"acme/operator-catalog"}}`), want: 400},
		{name: "no repository name", fixture: "dockerhub-push", body: []byte(`{"push_data":{"tag":"v1"},"repository":{}}`), want: 400},
		{name: "guessed path", fixture: "dockerhub-push", path: "/hooks/hub", want: 404},
	}
	runCases(t, "hub", append(cases, commonCases("dockerhub-push", "", false)...))
}

func TestGitHub(t *testing.T) {
	const sig = "X-Hub-Signature-256"
	cases := []httpCase{
		{name: "sample package published", fixture: "github-package-published", want: 202, trig: []string{"ghcr"}},
		// The owner is lower-cased; an untagged version matches by repository.
		{name: "registry_package untagged", fixture: "github-registry-package-untagged", want: 202, trig: []string{"ghcr-labs"}},
		{name: "ping", fixture: "github-ping", want: 200},
		{name: "npm package", fixture: "github-package-npm", want: 202},
		{name: "updated action", fixture: "github-package-updated", want: 202},
		{name: "push event", fixture: "github-package-published", header: map[string]string{"X-GitHub-Event": "push"}, want: 202},
		{name: "no event header", fixture: "github-package-published", header: map[string]string{"X-GitHub-Event": ""}, want: 400},
		{name: "legacy sha1 signature only", fixture: "github-package-published", header: map[string]string{sig: ""}, want: 401},
		{name: "signature without algorithm", fixture: "github-package-published", header: map[string]string{sig: "cd653b17c6add68dfa46a245951ae73bc8c5e948794912ac3288f6b64c1bc306"}, want: 403},
		{name: "body changed after signing", fixture: "github-package-published", body: bytes.Replace(loadFixture(t, "github-package-published").body, []byte(`"v4.16"`), []byte(`"v9.99"`), 1), want: 403},
		{name: "form content type", fixture: "github-package-published", body: []byte("payload=" + url.QueryEscape(string(loadFixture(t, "github-package-published").body))), header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, resign: sig, want: 202, trig: []string{"ghcr"}},
		{name: "package object missing", fixture: "github-package-published", body: []byte(`{"action":"published"}`), resign: sig, want: 400},
	}
	runCases(t, "gh", append(cases, commonCases("github-package-published", sig, true)...))
}

func TestZot(t *testing.T) {
	cases := []httpCase{
		{name: "sample image updated (binary mode)", fixture: "zot-image-updated", want: 202, trig: []string{"zot"}},
		// A custom type prefix, the host from the source URL, a digest reference.
		{name: "digest push with type prefix", fixture: "zot-image-updated-digest", want: 202, trig: []string{"zot"}},
		{name: "image deleted", fixture: "zot-image-deleted", want: 202},
		{name: "repository created", fixture: "zot-image-updated", header: map[string]string{"Ce-Type": "zotregistry.repository.created"}, want: 202},
		{name: "lint failed", fixture: "zot-image-updated", header: map[string]string{"Ce-Type": "zotregistry.image.lint_failed"}, want: 202},
		{name: "no ce headers", fixture: "zot-image-updated", header: map[string]string{"Ce-Specversion": "", "Ce-Id": "", "Ce-Type": "", "Ce-Source": ""}, want: 415},
		{name: "no ce-id", fixture: "zot-image-updated", header: map[string]string{"Ce-Id": ""}, want: 400},
		{name: "data without name", fixture: "zot-image-updated", body: []byte(`{"reference":"v4.16"}`), want: 400},
		{name: "structured mode", fixture: "zot-image-updated", body: []byte(`{"specversion":"1.0","id":"s1","source":"zot-events","type":"zotregistry.image.updated","datacontenttype":"application/json","data":{"name":"acme/operator-catalog","reference":"v4.16"}}`),
			header: map[string]string{"Content-Type": "application/cloudevents+json", "Ce-Specversion": "", "Ce-Id": "", "Ce-Type": "", "Ce-Source": "", "Ce-Time": ""}, want: 202, trig: []string{"zot"}},
		{name: "basic credentials of another user", fixture: "zot-image-updated", header: map[string]string{"Authorization": "Basic em90OnNlY3JldA=="}, want: 403},
	}
	common := commonCases("zot-image-updated", "Authorization", false)
	for i := range common {
		if common[i].name == "unsupported content type" {
			// In binary mode the content type is the data's: text data is
			// not a readable image event.
			common[i].want = http.StatusBadRequest
		}
	}
	runCases(t, "zot", append(cases, common...))
}

func TestACR(t *testing.T) {
	cases := []httpCase{
		{name: "sample push", fixture: "acr-push", want: 202, trig: []string{"acr"}},
		{name: "push by digest", fixture: "acr-push-digest", want: 202, trig: []string{"acr"}},
		{name: "delete", fixture: "acr-delete", want: 202},
		{name: "ping", fixture: "acr-ping", want: 202},
		{name: "chart push", fixture: "acr-push", body: []byte(`{"id":"x","action":"chart_push","target":{"repository":"charts/x"}}`), want: 202},
		{name: "no action", fixture: "acr-push", body: []byte(`{"id":"x","target":{"repository":"acme/x"}}`), want: 400},
		{name: "push without repository", fixture: "acr-push", body: []byte(`{"id":"x","action":"push","target":{"tag":"v1"}}`), want: 400},
	}
	runCases(t, "acr", append(cases, commonCases("acr-push", "Authorization", false)...))
}

func TestEventGrid(t *testing.T) {
	cases := []httpCase{
		{name: "structured push", fixture: "eventgrid-push", want: 202, trig: []string{"acr"}},
		{name: "batch with delete and chart", fixture: "eventgrid-batch", want: 202, trig: []string{"acr"}},
		{name: "empty batch", fixture: "eventgrid-batch", body: []byte(`[]`), want: 202},
		{name: "batch with an invalid event", fixture: "eventgrid-batch", body: []byte(`[{"specversion":"1.0","id":"1","type":"Microsoft.ContainerRegistry.ImagePushed"}]`), want: 400},
		{name: "image deleted only", fixture: "eventgrid-push", body: bytes.Replace(loadFixture(t, "eventgrid-push").body, []byte("ImagePushed"), []byte("ImageDeleted"), 1), want: 202},
		{name: "event grid schema is not accepted", fixture: "eventgrid-push", header: map[string]string{"Content-Type": "application/json"}, want: 415},
		{name: "binary mode is not accepted", fixture: "zot-image-updated", header: map[string]string{"Authorization": "Bearer eg-delivery-4c3b2a19"}, want: 415},
	}
	runCases(t, "eg", append(cases, commonCases("eventgrid-push", "Authorization", false)...))
}

func TestEventGridHandshake(t *testing.T) {
	rc, rec := newTestReceiver(t)
	req := httptest.NewRequest(http.MethodOptions, pathOf(t, rc, "eg"), nil)
	req.Header.Set("WebHook-Request-Origin", "eventgrid.example.test")
	req.Header.Set("WebHook-Request-Rate", "120")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	if w.Code != 200 || w.Header().Get("WebHook-Allowed-Origin") != "eventgrid.example.test" || w.Header().Get("WebHook-Allowed-Rate") == "" {
		t.Fatalf("handshake: %d %v", w.Code, w.Header())
	}
	req.Header.Del("WebHook-Request-Origin")
	w = httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	if w.Code != 400 || w.Header().Get("WebHook-Allowed-Origin") != "" {
		t.Fatalf("handshake without origin: %d %v", w.Code, w.Header())
	}
	// Senders without the handshake do not answer it.
	req = httptest.NewRequest(http.MethodOptions, pathOf(t, rc, "acr"), nil)
	req.Header.Set("WebHook-Request-Origin", "eventgrid.example.test")
	w = httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	if w.Code != 405 || w.Header().Get("WebHook-Allowed-Origin") != "" {
		t.Fatalf("OPTIONS to acr: %d %v", w.Code, w.Header())
	}
	if len(rec.catalogs()) != 0 {
		t.Fatal("a handshake triggered a sync")
	}
}

func TestArtifactory(t *testing.T) {
	const auth = "X-JFrog-Event-Auth"
	cases := []httpCase{
		// Both access methods are announced: repository path and subdomain.
		{name: "pushed, token", fixture: "artifactory-pushed", want: 202, trig: []string{"jfrog-path", "jfrog-sub"}},
		{name: "pushed, signed", fixture: "artifactory-pushed-signed", want: 202, trig: []string{"jfrog-path", "jfrog-sub"}},
		{name: "signature of another body", fixture: "artifactory-pushed-signed", body: loadFixture(t, "artifactory-deleted").body, want: 403},
		{name: "deleted", fixture: "artifactory-deleted", want: 202},
		{name: "artifact domain", fixture: "artifactory-artifact-deployed", want: 202},
		{name: "no domain", fixture: "artifactory-pushed", body: []byte(`{"data":{}}`), want: 400},
		{name: "pushed without image name", fixture: "artifactory-pushed", body: []byte(`{"domain":"docker","event_type":"pushed","data":{"repo_key":"docker-local"}}`), want: 400},
	}
	common := commonCases("artifactory-pushed", auth, false)
	for i := range common {
		if common[i].name == "forged auth" {
			common[i].header = map[string]string{auth: "not-the-secret"}
		}
	}
	runCases(t, "jfrog", append(cases, common...))
}

func TestGeneric(t *testing.T) {
	const sig = "X-Signature-256"
	cases := []httpCase{
		{name: "push", fixture: "generic-push", want: 202, trig: []string{"dist-test"}},
		{name: "digest only, receiver host", fixture: "generic-digest", want: 202, trig: []string{"dist-test", "dist-test-v1", "pinned"}},
		{name: "unknown repository", fixture: "generic-push", body: []byte(`{"repository":"acme/nothing","tag":"v1"}`), resign: sig, want: 202},
		{name: "no repository", fixture: "generic-push", body: []byte(`{"tag":"v1"}`), resign: sig, want: 400},
		{name: "bad digest", fixture: "generic-push", body: []byte(`{"repository":"acme/operator-catalog","digest":"sha256:abc"}`), resign: sig, want: 400},
		{name: "bad tag", fixture: "generic-push", body: []byte(`{"repository":"acme/operator-catalog","tag":"-x"}`), resign: sig, want: 400},
		{name: "bad host", fixture: "generic-push", body: []byte(`{"host":"a/b","repository":"acme/operator-catalog"}`), resign: sig, want: 400},
		{name: "replayed signature on another body", fixture: "generic-push", body: loadFixture(t, "generic-digest").body, want: 403},
	}
	runCases(t, "ci", append(cases, commonCases("generic-push", sig, true)...))
}
