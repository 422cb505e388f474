package sigpolicy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/ref"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/catalogsync/catalogsync/internal/certtest"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const (
	identity = "release@acme.example"
	issuer   = "https://issuer.acme.example"
)

// bundleBed is a real registry with a pipeline whose policy is rules and
// catalogs, publishing to a real filesystem store.
type bundleBed struct {
	t    *testing.T
	host string
	rc   *regclient.RegClient
	st   storage.Store
	pl   *pipeline.Pipeline
}

func newBundleBed(t *testing.T, rules []sigpolicy.Rule, catalogs map[string]sigpolicy.CatalogRule) *bundleBed {
	reg := servers.StartRegistry(t)
	b := &bundleBed{t: t, host: reg.Host, rc: imagebuild.NewRegClient(reg.Host)}
	for i := range rules {
		rules[i].Prefix = strings.ReplaceAll(rules[i].Prefix, "REG", reg.Host)
	}
	src, err := source.New(source.WithHosts(source.Host{Name: reg.Host, PlainHTTP: true}), source.WithDockerConfig(false), source.WithRetry(0, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	pol, err := sigpolicy.New(src, rules, catalogs)
	if err != nil {
		t.Fatal(err)
	}
	if b.st, err = fs.New(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b.pl = pipeline.New(src, b.st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true), pipeline.WithSignatureCheck(pol))
	return b
}

// push pushes a variant of the tiny catalog to repo:v1; it returns the
// digest and the manifest's bytes.
func (b *bundleBed) push(repo, variant string) (string, []byte) {
	b.t.Helper()
	_, file, _, _ := runtime.Caller(0)
	img := imagebuild.FromDir(filepath.Join(filepath.Dir(file), "../../testdata/fbc/tiny/configs"), "/configs")
	img.Labels["test.catalogsync/variant"] = variant
	ctx := context.Background()
	d, err := imagebuild.Push(ctx, b.rc, b.host+"/"+repo+":v1", img)
	if err != nil {
		b.t.Fatal(err)
	}
	r, _ := ref.New(b.host + "/" + repo + "@" + d)
	m, err := b.rc.ManifestGet(ctx, r)
	if err != nil {
		b.t.Fatal(err)
	}
	raw, err := m.RawBody()
	if err != nil {
		b.t.Fatal(err)
	}
	return d, raw
}

func (b *bundleBed) run(name, repo string) (pipeline.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return b.pl.Run(ctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(b.host + "/" + repo + ":v1")})
}

// blocked asserts the last sync failed terminally on the policy with
// want, and that name still serves digest.
func (b *bundleBed) blocked(name, what string, err error, want error, msg, digest string) {
	b.t.Helper()
	se, ok := pipeline.AsError(err)
	if !ok || se.Retryable || se.Reason != pipeline.ReasonSignature || !errors.Is(err, want) || !strings.Contains(err.Error(), msg) {
		b.t.Fatalf("%s: want %v (%q), got %v", what, want, msg, err)
	}
	b.t.Logf("%s: %v", what, err)
	if cur, _, err := catalog.Current(context.Background(), b.st, name); err != nil || cur.Digest != digest {
		b.t.Fatalf("%s: current %+v %v, want %s still served", what, cur, err, digest)
	}
}

func writePub(t *testing.T, pub any) string {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKeylessBundles syncs images signed keyless with sigstore bundles
// attached as referrers in a real registry: the right identity and
// issuer from the trusted CA → published, and meta.json names them;
// another identity, another issuer, an untrusted CA, a bundle of another
// digest or none → terminal, and the signed catalog is still served.
func TestKeylessBundles(t *testing.T) {
	ca, rogue := newCA(t, "test fulcio"), newCA(t, "rogue")
	rule := sigpolicy.Rule{Name: "acme", Prefix: "REG/acme", Requirement: sigpolicy.Requirement{Keyless: &sigpolicy.Keyless{
		TrustedRoot: ca.trustedRoot(t), Identity: identity, IssuerRegexp: `^https://issuer\.acme\.example$`, IgnoreTlog: true,
	}}}
	b := newBundleBed(t, []sigpolicy.Rule{rule}, nil)
	repo := b.host + "/acme/catalog"

	good, _ := b.push("acme/catalog", "good")
	attach(t, b.rc, repo, good, keylessBundle(t, ca, ca, identity, issuer, repo, good))
	res, err := b.run("cat", "acme/catalog")
	if err != nil || res.Action != pipeline.ActionPublished {
		t.Fatalf("signed: %+v %v", res, err)
	}
	for _, want := range []string{"keyless", "identity " + identity, "issuer " + issuer, `rule "acme"`} {
		if !strings.Contains(res.VerifiedBy, want) {
			t.Fatalf("verifiedBy %q does not name %q", res.VerifiedBy, want)
		}
	}
	t.Logf("verifiedBy: %s", res.VerifiedBy)
	meta, ok, err := catalog.HasContent(context.Background(), b.st, "cat", good)
	if err != nil || !ok || meta.VerifiedBy != res.VerifiedBy {
		t.Fatalf("meta.json: %+v %v %v", meta, ok, err)
	}
	// The pointer records it too: the ClusterCatalog's Serving message
	// is built from the pointer.
	if ptr, _, err := catalog.Current(context.Background(), b.st, "cat"); err != nil || ptr.VerifiedBy != res.VerifiedBy {
		t.Fatalf("pointer: %+v %v", ptr, err)
	}

	for _, tc := range []struct {
		name string
		sign func(d string)
		want error
		msg  string
	}{
		{"another identity", func(d string) {
			attach(t, b.rc, repo, d, keylessBundle(t, ca, ca, "intruder@acme.example", issuer, repo, d))
		}, sigpolicy.ErrWrongIdentity, `"intruder@acme.example"`},
		{"another issuer", func(d string) {
			attach(t, b.rc, repo, d, keylessBundle(t, ca, ca, identity, "https://elsewhere.example", repo, d))
		}, sigpolicy.ErrWrongIssuer, `"https://elsewhere.example"`},
		{"untrusted CA", func(d string) { attach(t, b.rc, repo, d, keylessBundle(t, rogue, ca, identity, issuer, repo, d)) }, sigpolicy.ErrUntrusted, "does not chain to a trusted certificate authority"},
		{"another digest", func(d string) { attach(t, b.rc, repo, d, keylessBundle(t, ca, ca, identity, issuer, repo, good)) }, sigpolicy.ErrOtherDigest, good},
		{"unsigned", func(string) {}, sigpolicy.ErrUnsigned, "no sigstore bundle"},
	} {
		d, _ := b.push("acme/catalog", tc.name)
		tc.sign(d)
		_, err := b.run("cat", "acme/catalog")
		b.blocked("cat", tc.name, err, tc.want, tc.msg, good)
		if !strings.Contains(err.Error(), `rule "acme"`) {
			t.Fatalf("%s: the error does not name the rule: %v", tc.name, err)
		}
	}
}

// TestKeyBundleAndCatalogRule: a key-based bundle attached as a referrer
// meets a key rule; a catalog's own requirement wins over the prefix rule
// its image falls under, whereas another catalog of the same image gets
// the prefix rule.
func TestKeyBundleAndCatalogRule(t *testing.T) {
	ca := newCA(t, "test fulcio")
	key := certtest.Key(t)
	keyed := sigpolicy.Requirement{KeyFiles: []string{writePub(t, &key.PublicKey)}}
	rules := []sigpolicy.Rule{
		{Prefix: "REG/keyed", Requirement: keyed},
		{Name: "release-key", Requirement: keyed},
		{Prefix: "REG/acme", Requirement: sigpolicy.Requirement{Keyless: &sigpolicy.Keyless{
			TrustedRoot: ca.trustedRoot(t), Identity: identity, Issuer: issuer, IgnoreTlog: true,
		}}},
	}
	b := newBundleBed(t, rules, map[string]sigpolicy.CatalogRule{"special": {Rule: "release-key"}})

	d, raw := b.push("keyed/catalog", "k")
	attach(t, b.rc, b.host+"/keyed/catalog", d, keyBundle(t, key, raw))
	res, err := b.run("keyed", "keyed/catalog")
	if err != nil || res.Action != pipeline.ActionPublished || !strings.Contains(res.VerifiedBy, "sigstore bundle, key") {
		t.Fatalf("key bundle: %+v %v", res, err)
	}

	// An image under the keyless prefix, signed only with the key.
	d, raw = b.push("acme/catalog", "k")
	attach(t, b.rc, b.host+"/acme/catalog", d, keyBundle(t, key, raw))
	res, err = b.run("special", "acme/catalog")
	if err != nil || res.Action != pipeline.ActionPublished || !strings.Contains(res.VerifiedBy, `rule "release-key"`) {
		t.Fatalf("catalog rule: %+v %v", res, err)
	}
	_, err = b.run("plain", "acme/catalog")
	var se *pipeline.Error
	if !errors.As(err, &se) || se.Reason != pipeline.ReasonSignature || !errors.Is(err, sigpolicy.ErrUntrusted) {
		t.Fatalf("prefix rule: %v", err)
	}
}

// TestPolicyConfig: what New refuses, each with ErrConfig.
func TestPolicyConfig(t *testing.T) {
	ca := newCA(t, "test fulcio")
	tr := ca.trustedRoot(t)
	pub := writePub(t, &certtest.Key(t).PublicKey)
	kl := func(k sigpolicy.Keyless) sigpolicy.Requirement { return sigpolicy.Requirement{Keyless: &k} }
	ok := kl(sigpolicy.Keyless{TrustedRoot: tr, Identity: identity, Issuer: issuer, IgnoreTlog: true})
	for _, tc := range []struct {
		name     string
		rules    []sigpolicy.Rule
		catalogs map[string]sigpolicy.CatalogRule
		msg      string
	}{
		{"no prefix or name", []sigpolicy.Rule{{Requirement: ok}}, nil, "prefix or a name"},
		{"keys and keyless", []sigpolicy.Rule{{Prefix: "r/a", Requirement: sigpolicy.Requirement{KeyFiles: []string{pub}, Keyless: ok.Keyless}}}, nil, "keys or keyless"},
		{"nothing", []sigpolicy.Rule{{Prefix: "r/a"}}, nil, "keys or keyless"},
		{"no identity", []sigpolicy.Rule{{Prefix: "r/a", Requirement: kl(sigpolicy.Keyless{TrustedRoot: tr, Issuer: issuer, IgnoreTlog: true})}}, nil, "identity or identityRegexp"},
		{"both issuers", []sigpolicy.Rule{{Prefix: "r/a", Requirement: kl(sigpolicy.Keyless{TrustedRoot: tr, Identity: identity, Issuer: issuer, IssuerRegexp: "x", IgnoreTlog: true})}}, nil, "issuer or issuerRegexp"},
		{"bad regexp", []sigpolicy.Rule{{Prefix: "r/a", Requirement: kl(sigpolicy.Keyless{TrustedRoot: tr, IdentityRegexp: "(", Issuer: issuer, IgnoreTlog: true})}}, nil, "identity"},
		{"no trusted root", []sigpolicy.Rule{{Prefix: "r/a", Requirement: kl(sigpolicy.Keyless{TrustedRoot: tr + ".missing", Identity: identity, Issuer: issuer, IgnoreTlog: true})}}, nil, "trusted root"},
		{"no log in root", []sigpolicy.Rule{{Prefix: "r/a", Requirement: kl(sigpolicy.Keyless{TrustedRoot: tr, Identity: identity, Issuer: issuer})}}, nil, "no transparency log"},
		{"duplicate name", []sigpolicy.Rule{{Name: "n", Requirement: ok}, {Name: "n", Requirement: ok}}, nil, "two rules"},
		{"unknown rule", nil, map[string]sigpolicy.CatalogRule{"c": {Rule: "n"}}, `no rule named "n"`},
		{"rule and inline", []sigpolicy.Rule{{Name: "n", Requirement: ok}}, map[string]sigpolicy.CatalogRule{"c": {Rule: "n", Requirement: ok}}, "not both"},
	} {
		_, err := sigpolicy.New(nil, tc.rules, tc.catalogs)
		if !errors.Is(err, sigpolicy.ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrConfig %q", tc.name, err, tc.msg)
		}
	}
}
