package webhook

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// In a CloudEvents batch an ignored event (a deletion) does not stop the
// pushes after it; a request that is no CloudEvent names its content type.
func TestCloudEventsBatchAndContentType(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../testdata/webhooks/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	body := "[" + read("harbor-cloudevents-deleted") + "," + read("harbor-cloudevents-push") + "]"
	h := http.Header{"Content-Type": {"application/cloudevents-batch+json"}}
	ps, err := parseCloudEventsRequest(h, []byte(body), ceOptions{harbor: true})
	if err != nil || len(ps) == 0 {
		t.Fatalf("a deletion then a push: %+v %v", ps, err)
	}
	for ct, want := range map[string]string{"": `"none"`, "text/plain": `"text/plain"`} {
		h := http.Header{}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		if _, err := ParseCloudEvents(h, []byte("{}")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("content type %q: %v, want it named %s", ct, err, want)
		}
	}
}

// hostOfURL takes the host of an absolute http(s) URL with a valid host.
func TestHostOfURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://Registry.Example.Test:5000/x": "registry.example.test:5000",
		"http://registry.example.test":         "registry.example.test",
		"ftp://registry.example.test":          "",
		"https://bad_host!/x":                  "",
		"registry.example.test/acme":           "",
		"%zz":                                  "",
	} {
		if got := hostOfURL(in); got != want {
			t.Errorf("hostOfURL(%q) = %q, want %q", in, got, want)
		}
	}
}
