package regconf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestEndpoints(t *testing.T) {
	c, err := Load("testdata/registries.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	e := func(name, mirror string) Endpoint { return Endpoint{Name: name, Mirror: mirror} }
	for _, tc := range []struct {
		name     string
		byDigest bool
		want     []Endpoint
		err      error
	}{
		// mirror-by-digest-only: mirrors for digests only, the primary last.
		{"registry.example.test/acme/catalog", true, []Endpoint{
			e("mirror-a.example.test:5000/acme-mirror/catalog", "mirror-a.example.test:5000/acme-mirror"),
			{Name: "mirror-b.example.test/acme/catalog", Mirror: "mirror-b.example.test/acme", Insecure: true},
			e("registry.example.test/acme/catalog", "")}, nil},
		{"registry.example.test/acme/catalog", false, []Endpoint{e("registry.example.test/acme/catalog", "")}, nil},
		// The prefix matches whole path elements only.
		{"registry.example.test/acmeother/x", true, []Endpoint{e("registry.example.test/acmeother/x", "")}, nil},
		// The drop-in replaced the quay entry: no mirrors, another location.
		{"quay.example.test/ns/x", false, []Endpoint{e("quay-internal.example.test/ns/x", "")}, nil},
		{"blocked.example.test/x/y", false, nil, ErrBlocked},
		{"a.internal.example.test/x", false, []Endpoint{e("mirror-a.example.test:5000/internal/x", "mirror-a.example.test:5000/internal"), e("a.internal.example.test/x", "")}, nil},
		{"elsewhere.example.test/x", false, []Endpoint{e("elsewhere.example.test/x", "")}, nil},
	} {
		got, err := c.Endpoints(tc.name, tc.byDigest)
		if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s digest=%v: %+v %v, want %+v %v", tc.name, tc.byDigest, got, err, tc.want, tc.err)
		}
	}
}

func TestPullFromMirror(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "registries.conf")
	os.WriteFile(p, []byte(`
[[registry]]
location = "src.example.test"
[[registry.mirror]]
location = "tags.example.test"
pull-from-mirror = "tag-only"
[[registry.mirror]]
location = "digests.example.test"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "all.example.test"
`), 0o644)
	c, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	names := func(byDigest bool) []string {
		es, _ := c.Endpoints("src.example.test/r", byDigest)
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	if got := names(false); !reflect.DeepEqual(got, []string{"tags.example.test/r", "all.example.test/r", "src.example.test/r"}) {
		t.Errorf("tag: %v", got)
	}
	if got := names(true); !reflect.DeepEqual(got, []string{"digests.example.test/r", "all.example.test/r", "src.example.test/r"}) {
		t.Errorf("digest: %v", got)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.conf"), false); err == nil {
		t.Error("missing file accepted")
	}
	if c, err := Load(filepath.Join(t.TempDir(), "none.conf"), true); err != nil || len(c.Registries) != 0 {
		t.Errorf("optional missing file: %v %v", c, err)
	}
	for name, body := range map[string]string{
		"not toml":        "[[registry",
		"v1 tables":       "[registries.block]\nregistries = ['a.example.test']",
		"no location":     "[[registry]]\nblocked = true",
		"bad pull mode":   "[[registry]]\nlocation = 'a.example.test'\n[[registry.mirror]]\nlocation = 'm.example.test'\npull-from-mirror = 'sometimes'",
		"mirror no loc":   "[[registry]]\nlocation = 'a.example.test'\n[[registry.mirror]]\ninsecure = true",
		"wildcard + loc":  "[[registry]]\nprefix = '*.example.test'\nlocation = 'a.example.test'",
		"mode and digest": "[[registry]]\nlocation = 'a.example.test'\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = 'm.example.test'\npull-from-mirror = 'tag-only'",
	} {
		p := filepath.Join(t.TempDir(), "registries.conf")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Load(p, false); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzLoad: any file content loads or fails with ErrInvalid, and a loaded
// configuration answers Endpoints without panicking.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{"testdata/registries.conf", "testdata/registries.conf.d/50-override.conf"} {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p := filepath.Join(t.TempDir(), "registries.conf")
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p, false)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		for _, n := range []string{"registry.example.test/acme/x", "a.b.example.test/x", ""} {
			c.Endpoints(n, true)
			c.Endpoints(n, false)
		}
	})
}
