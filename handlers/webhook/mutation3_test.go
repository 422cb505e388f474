package webhook

// Tests written for the mutants the third gremlins run found alive
// (docs/testing.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"golang.org/x/time/rate"
)

// jsonRequest is a POST of body as application/json with extra headers.
func jsonRequest(body string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/t", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

// Bug: Harbor CloudEvents redeliveries not deduplicated (no delivery id).
func TestHarborDeliveryIDs(t *testing.T) {
	h := newHarbor(ReceiverConfig{})
	ce := loadFixture(t, "harbor-cloudevents-push")
	want := []string{"/projects/3/webhook/policies/7#4b2f89a6-548d-4c12-9993-a1f5790b97d2"}
	if got := h.DeliveryIDs(ce.request("/hooks/harbor"), ce.body); !slices.Equal(got, want) {
		t.Errorf("CloudEvents: %q, want %q", got, want)
	}
	def := loadFixture(t, "harbor-push-artifact")
	if got := h.DeliveryIDs(def.request("/hooks/harbor"), def.body); len(got) != 0 {
		t.Errorf("default format: %q, want none", got)
	}
}

// Bug: the wrong Harbor repository is triggered: repo_full_name must win,
// namespace/name is only a fallback when both are given.
func TestHarborRepository(t *testing.T) {
	h := newHarbor(ReceiverConfig{Host: "harbor.example.test"})
	parse := func(repo string) ([]Push, error) {
		body := `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"v1"}],"repository":` + repo + `}}`
		return h.Parse(jsonRequest(body), []byte(body))
	}
	for repo, want := range map[string]string{
		`{"repo_full_name":"acme/team/cat","namespace":"acme","name":"cat"}`: "acme/team/cat",
		`{"namespace":"acme","name":"cat"}`:                                  "acme/cat",
	} {
		if ps, err := parse(repo); err != nil || len(ps) != 1 || ps[0].Repository != want {
			t.Errorf("%s: %+v %v, want %s", repo, ps, err, want)
		}
	}
	for _, repo := range []string{`{"namespace":"acme"}`, `{"name":"cat"}`, `{}`} {
		if _, err := parse(repo); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", repo, err)
		}
	}
}

// Bug: a Nexus signature with trailing junk after the right MAC is
// accepted (the hex decodes with an error but 20 bytes).
func TestNexusSignatureTrailingJunk(t *testing.T) {
	const secret = "hook-test-secret"
	body := []byte(`{"action":"CREATED"}`)
	good := SignSHA1(secret, body)
	for _, sig := range []string{good + "0", good + "zz", good + "00", good[:38]} {
		r := jsonRequest(string(body), nexusSignatureHeader, sig)
		if err := (&nexus{}).Authenticate(r, body, secret); !errors.Is(err, ErrForbidden) {
			t.Errorf("signature %q: %v, want forbidden", sig, err)
		}
	}
	if err := (&nexus{}).Authenticate(jsonRequest(string(body), nexusSignatureHeader, good), body, secret); err != nil {
		t.Errorf("good signature: %v", err)
	}
}

// Bug: Nexus events missing repositoryName or asset are accepted (or
// panic) instead of being refused as malformed.
func TestNexusMalformed(t *testing.T) {
	n := newNexus(ReceiverConfig{Host: "nexus.example.test:8443"})
	for body, kind := range map[string]string{
		`{"action":"CREATED","component":{"format":"docker","name":"acme/cat","version":"v1"}}`: "rm:repository:component",
		`{"repositoryName":"docker-hosted","action":"CREATED"}`:                                 "rm:repository:asset",
		`{"repositoryName":"docker-hosted","action":"CREATED","asset":{"format":"docker"}}`:     "rm:repository:asset",
	} {
		if _, err := n.Parse(jsonRequest(body, nexusEventHeader, kind), []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", body, err)
		}
	}
}

// Bug: a Nexus asset that is no manifest under v2/ triggers a sync.
func TestNexusAssetNotManifest(t *testing.T) {
	n := newNexus(ReceiverConfig{Host: "nexus.example.test:8443"})
	for _, name := range []string{"acme/cat/manifests/v1", "v2//manifests/v1", "v2/acme/cat/manifests/", "v2/acme/cat/tags/list"} {
		body := `{"repositoryName":"docker-hosted","action":"CREATED","asset":{"format":"docker","name":"` + name + `"}}`
		if ps, err := n.Parse(jsonRequest(body, nexusEventHeader, "rm:repository:asset"), []byte(body)); !errors.Is(err, ErrIgnored) {
			t.Errorf("asset %s: %+v %v, want ignored", name, ps, err)
		}
	}
}

// Bug: a Quay notification that is no repo_push (a build, a security
// report) is answered as malformed, or a build's tags trigger syncs.
func TestQuayNotPush(t *testing.T) {
	q := newQuay(ReceiverConfig{})
	build := loadFixture(t, "quay-build-success")
	for _, body := range []string{
		string(build.body),
		`{"repository":"acme/cat"}`,
		`{"repository":"acme/cat","updated_tags":null}`,
		`{"repository":"acme/cat","build_id":"b1","updated_tags":["v1"]}`,
	} {
		if ps, err := q.Parse(jsonRequest(body), []byte(body)); !errors.Is(err, ErrIgnored) {
			t.Errorf("%.60s: %+v %v, want ignored", body, ps, err)
		}
	}
}

// Bug: a zero or negative notice interval logs each reason once ever
// (a zero rate.Sometimes), or a set interval is not used.
func TestNoticesInterval(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{0: DefaultNoticeInterval, -time.Second: DefaultNoticeInterval, time.Second: time.Second} {
		if got := NewNotices(d).every; got != want {
			t.Errorf("NewNotices(%v): every %v, want %v", d, got, want)
		}
	}
}

// Bug: the info line miscounts the notices logged at debug level since
// the last one (or names a count when none were).
func TestNoticesAlsoSince(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := NewNotices(time.Hour)
	ctx := context.Background()
	for range 3 {
		n.Log(ctx, log, "k", "unmatched")
	}
	// The interval elapses (without waiting for it).
	n.mu.Lock()
	n.byKey["k"].sometimes = rate.Sometimes{Interval: time.Hour}
	n.mu.Unlock()
	n.Log(ctx, log, "k", "unmatched")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		s, _ := rec["level"].(string)
		if v, ok := rec["alsoSince"]; ok {
			s = fmt.Sprintf("%s+%v", s, v)
		}
		got = append(got, s)
	}
	if want := []string{"INFO", "DEBUG", "DEBUG", "INFO+2"}; !slices.Equal(got, want) {
		t.Errorf("levels %q, want %q", got, want)
	}
}

// Bug: the warning that a receiver accepts unauthenticated requests is
// missing for one that does, or cries wolf for authenticated ones (a
// secret, or signed tokens without a secret).
func TestReceiverInsecureWarning(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gar := testConfig.Receivers[slices.IndexFunc(testConfig.Receivers, func(c ReceiverConfig) bool { return c.Type == TypeGAR })]
	_, err := NewReceiver(Config{Receivers: []ReceiverConfig{
		{Name: "open", Type: TypeDistribution, Insecure: true},
		{Name: "keyed", Type: TypeDistribution, Insecure: true, Secret: "s3cret"},
		{Name: "plain", Type: TypeHarbor, Secret: "s3cret"},
		gar,
	}}, testCatalogs, &recorder{}, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		warned = append(warned, fmt.Sprint(rec["receiver"]))
	}
	if !slices.Equal(warned, []string{"open"}) {
		t.Errorf("warned about %q, want [open]", warned)
	}
}

// Bug: a path derived from a token (a credential) is not flagged secret,
// so it shows in metrics and logs; or an ordinary path is hidden.
func TestEndpointSecretFlag(t *testing.T) {
	rc, _ := newTestReceiver(t)
	for _, e := range rc.Endpoints() {
		if want := e.Name == "quay" || e.Name == "hub"; e.Secret != want {
			t.Errorf("%s (%s): Secret %v, want %v", e.Name, e.Type, e.Secret, want)
		}
	}
	open, err := NewReceiver(Config{Receivers: []ReceiverConfig{{Name: "hub", Type: TypeDockerHub, Insecure: true}}}, testCatalogs, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if e := open.Endpoints()[0]; e.Secret {
		t.Errorf("insecure %s at %s: flagged secret", e.Name, e.Path)
	}
}

// Bug: marking a signed-token receiver insecure switches its token check
// off, so anyone can trigger syncs through it.
func TestReceiverInsecureKeyAuth(t *testing.T) {
	gar := testConfig.Receivers[slices.IndexFunc(testConfig.Receivers, func(c ReceiverConfig) bool { return c.Type == TypeGAR })]
	gar.Insecure = true
	rec := &recorder{}
	rc, err := NewReceiver(Config{Receivers: []ReceiverConfig{gar}}, testCatalogs, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"", "Bearer not-a-token"} {
		f := loadFixture(t, "gar-push")
		f.header.Del("Authorization")
		if auth != "" {
			f.header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, f.request(pathOf(t, rc, gar.Name)))
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusForbidden || len(rec.catalogs()) != 0 {
			t.Errorf("Authorization %q: status %d, triggers %v", auth, w.Code, rec.catalogs())
		}
	}
}

// Bug: in a notification of several pushes, one that matches no catalog,
// or one whose catalog was already triggered, stops the pushes and
// catalogs after it from being triggered.
func TestDispatchGoesOn(t *testing.T) {
	m, err := NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	cats := []Catalog{
		{Name: "v1", Image: "registry.example.test/acme/cat:v1"},
		{Name: "v2", Image: "registry.example.test/acme/cat:v2"},
	}
	p := func(tag string) Push { return Push{Host: "registry.example.test", Repository: "acme/cat", Tag: tag} }
	rec := &recorder{}
	// v9 matches nothing; v1 then the tagless push (v1 again, then v2).
	n := Dispatch(context.Background(), m, cats, []Push{p("v9"), p("v1"), p("")}, rec, "test", slog.New(slog.DiscardHandler))
	if got := rec.catalogs(); n != 2 || !slices.Equal(got, []string{"v1", "v2"}) {
		t.Errorf("triggered %d: %v, want v1 and v2 once each", n, got)
	}
}

// Bug: a body of exactly the size limit is refused as too large.
func TestReadBodyAtLimit(t *testing.T) {
	const max = 16
	for size, want := range map[int]int{max: 0, max + 1: http.StatusRequestEntityTooLarge} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", strings.NewReader(strings.Repeat("x", size)))
		body, status, err := ReadBody(httptest.NewRecorder(), r, max)
		if status != want || (want == 0) != (err == nil && len(body) == size) {
			t.Errorf("%d bytes: status %d, %d bytes read, %v; want status %d", size, status, len(body), err, want)
		}
	}
}

// Bug: the log line naming a notification's pushes is not bounded (all
// pushes, whole long names), miscounts the rest, or misplaces commas.
func TestDescribe(t *testing.T) {
	p := func(repo string) Push { return Push{Host: "r.example.test", Repository: repo, Tag: "v1"} }
	for _, tc := range []struct {
		pushes []Push
		want   string
	}{
		{[]Push{p("a")}, "r.example.test/a:v1"},
		{[]Push{p("a"), p("b")}, "r.example.test/a:v1, r.example.test/b:v1"},
		{[]Push{p("a"), p("b"), p("c"), p("d"), p("e")}, "r.example.test/a:v1, r.example.test/b:v1, r.example.test/c:v1 and 2 more"},
	} {
		if got := describe(tc.pushes); got != tc.want {
			t.Errorf("describe: %q, want %q", got, tc.want)
		}
	}
	// "r.example.test/" and ":v1" are 18 bytes of the 256 kept.
	exact, long := p(strings.Repeat("a", 256-18)), p(strings.Repeat("a", 257-18))
	if got := describe([]Push{exact}); got != exact.String() {
		t.Errorf("256 bytes: %q, want it whole", got)
	}
	if got := describe([]Push{long}); got != long.String()[:256]+"…" {
		t.Errorf("257 bytes: %q, want 256 and an ellipsis", got)
	}
}

// Bug: the 415 answer misnames the content type that was sent (or says
// nothing when none was).
func TestRequireMediaTypeNamesIt(t *testing.T) {
	for ct, want := range map[string]string{"": `"none"`, "text/plain": `"text/plain"`} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := requireMediaType(r, "application/json")
		if !errors.Is(err, ErrUnsupportedMediaType) || !strings.Contains(err.Error(), want) {
			t.Errorf("content type %q: %v, want it named %s", ct, err, want)
		}
	}
}

// Bug: a header that is neither the secret nor "Bearer <secret>" but ends
// with the secret is accepted, or a short one panics.
func TestAuthenticateHeaderOtherSchemes(t *testing.T) {
	const secret = "s3cret-value"
	for _, v := range []string{"Token: " + secret, "Basic  " + secret, "abc", "Bearer", "bearer x"} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/t", nil)
		r.Header.Set("Authorization", v)
		if err := AuthenticateHeader(r, "Authorization", secret); !errors.Is(err, ErrForbidden) {
			t.Errorf("%q: %v, want forbidden", v, err)
		}
	}
}

// Bug: a repository name of exactly the 255-byte limit is refused, or a
// bracketed host that is no IPv6 literal names a registry.
func TestNormalizeLimits(t *testing.T) {
	name := func(n int) string { return "acme/" + strings.Repeat("a", n-len("acme/")) }
	if _, err := normalize(Push{Host: "registry.example.test", Repository: name(maxRepoLen)}); err != nil {
		t.Errorf("%d bytes: %v", maxRepoLen, err)
	}
	if _, err := normalize(Push{Host: "registry.example.test", Repository: name(maxRepoLen + 1)}); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d bytes: %v, want malformed", maxRepoLen+1, err)
	}
	if _, err := normalize(Push{Host: "[1.2.3.4]", Repository: "acme/cat"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("host [1.2.3.4]: %v, want malformed", err)
	}
}

// Bug: a reported manifest media type of the maximum 255 bytes, or one
// with parameters (spaces), is dropped; control characters are kept.
func TestNormalizeMediaType(t *testing.T) {
	long := "application/" + strings.Repeat("x", 255-len("application/"))
	for mt, want := range map[string]string{
		long:       long,
		long + "x": "",
		"application/vnd.oci.image.index.v1+json; charset=utf-8": "application/vnd.oci.image.index.v1+json; charset=utf-8",
		"application/json\x1f": "",
		"application/json\x7f": "",
	} {
		p, err := normalize(Push{Repository: "acme/cat", MediaType: mt})
		if err != nil || p.MediaType != want {
			t.Errorf("media type %q: %q %v, want %q", mt, p.MediaType, err, want)
		}
	}
}

// Bug: the registry host of a resource URL is wrong: lost when the URL
// has a scheme (even an empty one) or is localhost, or taken from a
// Docker Hub "namespace/name" or a bare single-name image.
func TestHostOfForms(t *testing.T) {
	for in, want := range map[string]string{
		"://registry.example.test/acme/cat":        "registry.example.test",
		"https://registry.example.test/acme/cat":   "registry.example.test",
		" registry.example.test:5000/acme/cat:v1 ": "registry.example.test:5000",
		"localhost/acme/cat":                       "localhost",
		"acme/cat:v1":                              "",
		"registry.example.test":                    "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Bug: a zot push by digest whose data names no separate digest loses it
// (and then matches every tag of the repository).
func TestZotPushByDigest(t *testing.T) {
	ev := event.New()
	ev.SetID("1")
	ev.SetSource("zot")
	ev.SetType("zotregistry.image.updated")
	if err := ev.SetData(event.ApplicationJSON, map[string]string{"name": "acme/cat", "reference": digAMD}); err != nil {
		t.Fatal(err)
	}
	ps, err := zotPush(ev, "zot.example.test:5000")
	if err != nil || len(ps) != 1 || ps[0].Digest != digAMD || ps[0].Tag != "" {
		t.Fatalf("push by digest: %+v %v", ps, err)
	}
}
