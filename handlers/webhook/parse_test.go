package webhook

import (
	"errors"
	"reflect"
	"testing"
)

// TestParseFixtures checks the exact pushes read from each sender's
// requests: pure parsing, no receiver.
func TestParseFixtures(t *testing.T) {
	const repo = "acme/operator-catalog"
	idxMT := "application/vnd.oci.image.index.v1+json"
	manMT := "application/vnd.oci.image.manifest.v1+json"
	tests := []struct {
		fixture string
		cfg     ReceiverConfig
		want    []Push
		err     error
	}{
		{"distribution-push", ReceiverConfig{Type: TypeDistribution},
			[]Push{{"registry.example.com", repo, "v4.16", digIndex, idxMT}}, nil},
		{"distribution-multi", ReceiverConfig{Type: TypeDistribution}, []Push{
			{"registry.example.test", repo, "", digAMD, manMT},
			{"registry.example.test", repo, "", digARM, manMT},
			{"registry.example.test", repo, "v4.16", digIndex, idxMT},
		}, nil},
		{"distribution-ignored", ReceiverConfig{Type: TypeDistribution}, nil, ErrIgnored},
		{"gitlab-push", ReceiverConfig{Type: TypeGitLab},
			[]Push{{"registry.gitlab.example.test", repo, "v4.16", digIndex, idxMT}}, nil},
		{"gitlab-rename", ReceiverConfig{Type: TypeGitLab},
			[]Push{{Host: "registry.gitlab.example.test", Repository: repo}}, nil},
		{"gitlab-delete", ReceiverConfig{Type: TypeGitLab}, nil, ErrIgnored},
		{"harbor-push-artifact", ReceiverConfig{Type: TypeHarbor},
			[]Push{{Host: "harbor.example.com", Repository: repo, Tag: "v4.16", Digest: digIndex}}, nil},
		{"harbor-push-untagged", ReceiverConfig{Type: TypeHarbor},
			[]Push{{Host: "harbor.example.test", Repository: repo, Digest: digAMD}}, nil},
		{"harbor-pull-artifact", ReceiverConfig{Type: TypeHarbor}, nil, ErrIgnored},
		{"harbor-cloudevents-push", ReceiverConfig{Type: TypeHarbor},
			[]Push{{Host: "harbor.example.test", Repository: repo, Tag: "v4.16", Digest: digIndex}}, nil},
		{"harbor-cloudevents-deleted", ReceiverConfig{Type: TypeHarbor}, nil, ErrIgnored},
		{"quay-repo_push", ReceiverConfig{Type: TypeQuay},
			[]Push{{Host: "quay.example.test", Repository: repo, Tag: "v4.16"}}, nil},
		{"quay-repo_push-legacy", ReceiverConfig{Type: TypeQuay}, []Push{
			{Host: "quay.example.test:8443", Repository: repo, Tag: "latest"},
			{Host: "quay.example.test:8443", Repository: repo, Tag: "v4.16"},
		}, nil},
		{"quay-build-success", ReceiverConfig{Type: TypeQuay}, nil, ErrIgnored},
		{"dockerhub-push", ReceiverConfig{Type: TypeDockerHub},
			[]Push{{Host: defaultRegistry(), Repository: repo, Tag: "v4.16"}}, nil},
		{"dockerhub-push", ReceiverConfig{Type: TypeDockerHub, Host: "hub-mirror.example.test"},
			[]Push{{Host: "hub-mirror.example.test", Repository: repo, Tag: "v4.16"}}, nil},
		{"github-package-published", ReceiverConfig{Type: TypeGitHub},
			[]Push{{"ghcr.example.test", repo, "v4.16", digIndex, idxMT}}, nil},
		{"github-registry-package-untagged", ReceiverConfig{Type: TypeGitHub},
			[]Push{{"ghcr.example.test", "acme-labs/operator-catalog", "", digAMD, manMT}}, nil},
		{"github-ping", ReceiverConfig{Type: TypeGitHub}, nil, ErrPing},
		{"github-package-npm", ReceiverConfig{Type: TypeGitHub}, nil, ErrIgnored},
		{"github-package-updated", ReceiverConfig{Type: TypeGitHub}, nil, ErrIgnored},
		// zot's default source is no URL: the host is unknown without config.
		{"zot-image-updated", ReceiverConfig{Type: TypeZot},
			[]Push{{"", repo, "v4.16", digIndex, idxMT}}, nil},
		{"zot-image-updated", ReceiverConfig{Type: TypeZot, Host: "zot.example.test"},
			[]Push{{"zot.example.test", repo, "v4.16", digIndex, idxMT}}, nil},
		{"zot-image-updated-digest", ReceiverConfig{Type: TypeZot, Host: "elsewhere.example.test"},
			[]Push{{"zot.example.test:5000", repo, "", digAMD, manMT}}, nil},
		{"zot-image-deleted", ReceiverConfig{Type: TypeZot}, nil, ErrIgnored},
		{"acr-push", ReceiverConfig{Type: TypeACR},
			[]Push{{"acmecatalogs.acr.example.test", repo, "v4.16", digIndex, idxMT}}, nil},
		{"acr-push-digest", ReceiverConfig{Type: TypeACR},
			[]Push{{"acmecatalogs.acr.example.test", repo, "", digARM, manMT}}, nil},
		{"acr-delete", ReceiverConfig{Type: TypeACR}, nil, ErrIgnored},
		{"acr-ping", ReceiverConfig{Type: TypeACR}, nil, ErrIgnored},
		{"eventgrid-push", ReceiverConfig{Type: TypeEventGrid},
			[]Push{{"acmecatalogs.acr.example.test", repo, "v4.16", digIndex, idxMT}}, nil},
		{"eventgrid-batch", ReceiverConfig{Type: TypeEventGrid},
			[]Push{{"acmecatalogs.acr.example.test", repo, "", digAMD, manMT}}, nil},
		{"artifactory-pushed", ReceiverConfig{Type: TypeArtifactory}, []Push{
			{Host: "artifactory.example.test", Repository: "docker-local/" + repo, Tag: "v4.16", Digest: digIndex},
			{Host: "docker-local.artifactory.example.test", Repository: repo, Tag: "v4.16", Digest: digIndex},
		}, nil},
		{"artifactory-deleted", ReceiverConfig{Type: TypeArtifactory}, nil, ErrIgnored},
		{"artifactory-artifact-deployed", ReceiverConfig{Type: TypeArtifactory}, nil, ErrIgnored},
		{"generic-push", ReceiverConfig{Type: TypeGeneric},
			[]Push{{Host: "registry.example.test", Repository: repo, Tag: "v4.16", Digest: digIndex}}, nil},
		{"generic-digest", ReceiverConfig{Type: TypeGeneric},
			[]Push{{Repository: repo, Digest: digAMD}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.cfg.Type+"/"+tc.fixture, func(t *testing.T) {
			src, err := NewSender(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			f := loadFixture(t, tc.fixture)
			got, err := src.Parse(f.request("/"), f.body)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in   Push
		want Push
		ok   bool
	}{
		{Push{Host: "Registry.Example.TEST:5000", Repository: "a/b", Tag: "v1"}, Push{Host: "registry.example.test:5000", Repository: "a/b", Tag: "v1"}, true},
		// A digest in the tag field (Harbor's untagged pushes) moves.
		{Push{Repository: "a/b", Tag: digAMD}, Push{Repository: "a/b", Digest: digAMD}, true},
		{Push{Repository: "a/b", Tag: digAMD, Digest: digAMD}, Push{Repository: "a/b", Digest: digAMD}, true},
		{Push{Repository: "a/b", Tag: digAMD, Digest: digARM}, Push{}, false},
		// regclient's names: a registry alias and single-name images.
		{Push{Host: "index." + defaultRegistry(), Repository: "ubuntu"}, Push{Host: defaultRegistry(), Repository: "library/ubuntu"}, true},
		{Push{Repository: "A/b"}, Push{}, false},
		{Push{Repository: "a//b"}, Push{}, false},
		{Push{Repository: ""}, Push{}, false},
		{Push{Repository: "a/b", Tag: ".x"}, Push{}, false},
		{Push{Repository: "a/b", Digest: "sha256:1234"}, Push{}, false},
		{Push{Repository: "a/b", Digest: "md5:" + digAMD[7:]}, Push{}, false},
		{Push{Host: "host/with/path", Repository: "a/b"}, Push{}, false},
		{Push{Host: "[::1]:5000", Repository: "a/b"}, Push{Host: "[::1]:5000", Repository: "a/b"}, true},
		{Push{Repository: "a/b", MediaType: "bad\ntype"}, Push{Repository: "a/b"}, true},
	}
	for _, tc := range tests {
		got, err := normalize(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("normalize(%+v): err = %v", tc.in, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("normalize(%+v): %v does not wrap ErrMalformed", tc.in, err)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("normalize(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
