package pullsecret

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParse(t *testing.T) {
	sec := func(typ corev1.SecretType, key, data string) *Secret {
		return &Secret{Type: string(typ), Data: map[string][]byte{key: []byte(data)}}
	}
	good := sec(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
		`{"auths":{"https://Registry.Example.test:5000/v1/":{"auth":"dTE6cDE6d2l0aC1jb2xvbg=="},"quay.example.test":{"username":"u2","password":"p2"},"ghcr.example.test":{"identitytoken":"tok"}}}`)
	c, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	if c["registry.example.test:5000"].Password != "p1:with-colon" || c["quay.example.test"].Username != "u2" || c["ghcr.example.test"].Password != "tok" {
		t.Fatalf("%v", c)
	}
	legacy := sec(corev1.SecretTypeDockercfg, corev1.DockerConfigKey, `{"registry.example.test":{"auth":"dTpw"}}`)
	if c, err := Parse(legacy); err != nil || c["registry.example.test"].Password != "p" {
		t.Fatalf("legacy: %v %v", c, err)
	}
	for name, s := range map[string]*Secret{
		"opaque":        sec(corev1.SecretTypeOpaque, "x", "{}"),
		"not json":      sec(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, "s3cr3t-not-json"),
		"auth not b64":  sec(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"h.example.test":{"auth":"s3cr3t%%"}}}`),
		"auth no colon": sec(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"h.example.test":{"auth":"czNjcjN0"}}}`),
		"empty entry":   sec(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"h.example.test":{}}}`),
	} {
		_, err := Parse(s)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		// Errors never quote the content.
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: error quotes the secret: %v", name, err)
		}
	}
	if got := (c["quay.example.test"]).String(); strings.Contains(got, "p2") {
		t.Fatalf("Credential.String shows the password: %s", got)
	}
}
