package servers

import (
	"net/http"
	"testing"
)

func TestCatalogsyncKillAndRestart(t *testing.T) {
	c := StartCatalogsync(t, []string{"--store", t.TempDir()})
	get := func() error {
		resp, err := http.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	c.Kill()
	if err := get(); err == nil {
		t.Fatal("still answering after Kill")
	}
	c.Start()
	if err := get(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
