package pullsecret

import (
	"strings"
	"testing"
)

// The Secret types and keys, spelled here rather than taken from the
// package, so that a typo there fails the test.
const (
	typeJSON, keyJSON = "kubernetes.io/dockerconfigjson", ".dockerconfigjson"
	typeCfg, keyCfg   = "kubernetes.io/dockercfg", ".dockercfg"
)

func TestParse(t *testing.T) {
	sec := func(typ, key, data string) *Secret {
		return &Secret{Type: typ, Data: map[string][]byte{key: []byte(data)}}
	}
	good := sec(typeJSON, keyJSON,
		`{"auths":{"https://Registry.Example.test:5000/v1/":{"auth":"dTE6cDE6d2l0aC1jb2xvbg=="},"quay.example.test":{"username":"u2","password":"p2"},"ghcr.example.test":{"identitytoken":"tok"}}}`)
	c, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	if c["registry.example.test:5000"].Password != "p1:with-colon" || c["quay.example.test"].Username != "u2" || c["ghcr.example.test"].Password != "tok" {
		t.Fatalf("%v", c)
	}
	legacy := sec(typeCfg, keyCfg, `{"registry.example.test":{"auth":"dTpw"}}`)
	if c, err := Parse(legacy); err != nil || c["registry.example.test"].Password != "p" {
		t.Fatalf("legacy: %v %v", c, err)
	}
	for name, s := range map[string]*Secret{
		"opaque":        sec("Opaque", "x", "{}"),
		"not json":      sec(typeJSON, keyJSON, "s3cr3t-not-json"),
		"auth not b64":  sec(typeJSON, keyJSON, `{"auths":{"h.example.test":{"auth":"s3cr3t%%"}}}`),
		"auth no colon": sec(typeJSON, keyJSON, `{"auths":{"h.example.test":{"auth":"czNjcjN0"}}}`),
		"empty entry":   sec(typeJSON, keyJSON, `{"auths":{"h.example.test":{}}}`),
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
