package main

import (
	"encoding/json"
	"testing"
	"time"
)

// catalogState is what these tests read of GET /api/v1/catalogs/{name}.
type catalogState struct {
	Running             json.RawMessage `json:"running"`
	Queued              json.RawMessage `json:"queued"`
	NextRetry           time.Time       `json:"nextRetry"`
	ConsecutiveFailures int             `json:"consecutiveFailures"`
	LastSync            *struct {
		State    string    `json:"state"`
		Finished time.Time `json:"finished"`
		Result   *struct {
			Digest     string `json:"digest"`
			VerifiedBy string `json:"verifiedBy"`
		} `json:"result"`
		Error *struct {
			Reason    string `json:"reason"`
			Retryable bool   `json:"retryable"`
			Message   string `json:"message"`
		} `json:"error"`
	} `json:"lastSync"`
	Published *struct {
		Digest     string `json:"digest"`
		VerifiedBy string `json:"verifiedBy"`
	} `json:"published"`
}

func getCatalog(t *testing.T, addr, name string) (catalogState, string) {
	t.Helper()
	code, body := do(t, "GET", "http://"+addr+"/api/v1/catalogs/"+name, "", nil)
	var v catalogState
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("GET catalog %s: %d %s", name, code, body)
	}
	return v, body
}

// settledCatalog waits until the catalog has no sync running or queued and
// its last sync is in state, and returns that view.
func settledCatalog(t *testing.T, addr, name, state string) (catalogState, string) {
	t.Helper()
	var v catalogState
	var body string
	eventually(t, name+" settled "+state, 90*time.Second, func() bool {
		// 404 until the catalog reaches the server: a ClusterCatalog
		// arrives through the watch, after kubectl has returned.
		if code, _ := do(t, "GET", "http://"+addr+"/api/v1/catalogs/"+name, "", nil); code == 404 {
			return false
		}
		v, body = getCatalog(t, addr, name)
		return v.Running == nil && v.Queued == nil && v.LastSync != nil && v.LastSync.State == state
	})
	return v, body
}
