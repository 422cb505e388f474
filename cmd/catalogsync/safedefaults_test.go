package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/test/kubeobj"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

const pingBody = `{"specversion":"1.0","type":"dev.knative.sources.ping","source":"/apis/v1/namespaces/x/pingsources/p","id":"ID","data":{}}`

func ping(id string) string { return strings.Replace(pingBody, "ID", id, 1) }

var ceJSON = map[string]string{"Content-Type": "application/cloudevents+json"}

// Triggers need credentials unless the operator opens them, and then
// serve says so at start.
func TestServeSafeDefaults(t *testing.T) {
	store := t.TempDir()
	t.Run("events without credentials refuse to start", func(t *testing.T) {
		cfg := writeServeConfig(t, "events: {}\n")
		var errb logbuf.Buffer
		code := run(context.Background(), []string{"serve", "--config", cfg, "--store", store, "--addr", freeport.Addr(t)}, io.Discard, &errb)
		if code == 0 || !strings.Contains(errb.String(), "insecure: true") {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	})
	t.Run("closed by default", func(t *testing.T) {
		cfg := writeServeConfig(t, "catalogs: [{name: tiny, image: \"127.0.0.1:1/tiny:v1\"}]\nevents: {token: s3cret}\n")
		s := startServe(t, "--config", cfg, "--store", store)
		base := "http://" + s.addr
		if code, body := do(t, "POST", base+"/api/v1/catalogs/tiny/sync", "", nil); code != 401 {
			t.Fatalf("POST without a token: %d %s", code, body)
		}
		if code, _ := do(t, "POST", base+"/events", ping("a"), ceJSON); code != 401 {
			t.Fatalf("/events without a token: %d", code)
		}
		if code, _ := do(t, "POST", base+"/events", ping("b"), map[string]string{"Content-Type": ceJSON["Content-Type"], "Authorization": "Bearer s3cret"}); code != 202 {
			t.Fatalf("/events with the token: %d", code)
		}
		if logs := s.logs.String(); strings.Contains(logs, "without a token (--api-open)") || strings.Contains(logs, "events.insecure") {
			t.Fatalf("warnings on a closed server:\n%s", s.logs.String())
		}
	})
	t.Run("opened explicitly, with warnings", func(t *testing.T) {
		cfg := writeServeConfig(t, "catalogs: [{name: tiny, image: \"127.0.0.1:1/tiny:v1\"}]\nevents: {insecure: true}\n")
		s := startServe(t, "--config", cfg, "--store", store, "--api-open")
		base := "http://" + s.addr
		if code, body := do(t, "POST", base+"/api/v1/catalogs/tiny/sync", "", nil); code != 202 {
			t.Fatalf("POST on an open API: %d %s", code, body)
		}
		if code, _ := do(t, "POST", base+"/events", ping("c"), ceJSON); code != 202 {
			t.Fatalf("/events when insecure: %d", code)
		}
		logs := s.logs.String()
		for _, want := range []string{"without a token (--api-open)", "accepts unauthenticated events (events.insecure)"} {
			if !strings.Contains(logs, want) {
				t.Errorf("no warning %q:\n%s", want, logs)
			}
		}
	})
}

// Random catalog names are answered 404 without a store operation.
func TestServeUnknownNamesCostNoStoreOps(t *testing.T) {
	t.Parallel()
	// A missing OCI layout is a terminal failure: the one sync attempt at
	// start is not retried, so no background work touches the store while
	// the unknown names are asked for (a registry that is down would be
	// retried, and each retry takes the sync lease in the store).
	cfg := writeServeConfig(t, "catalogs: [{name: tiny, image: \"ocidir://"+filepath.Join(t.TempDir(), "absent")+":v1\"}]\n")
	s := startServe(t, "--config", cfg, "--store", t.TempDir())
	base := "http://" + s.addr
	// Start-up work (the first sync attempt, marking the configured
	// catalog for GC) touches the store once: let it settle first.
	before := storeOpsMetric(t, s.addr)
	for i := 0; i < 60; i++ {
		time.Sleep(500 * time.Millisecond)
		now := storeOpsMetric(t, s.addr)
		if now == before && i > 0 {
			break
		}
		before = now
	}
	for range 300 {
		name := "x" + strconv.FormatUint(rand.Uint64(), 36)
		if code, _ := do(t, "GET", base+"/catalogs/"+name+"/api/v1/all", "", nil); code != 404 {
			t.Fatalf("%s: %d", name, code)
		}
	}
	if after := storeOpsMetric(t, s.addr); after != before {
		t.Fatalf("300 requests for unknown catalogs made %d store operations", after-before)
	}
}

var storeOpRE = regexp.MustCompile(`(?m)^catalogsync_storage_operation_duration_seconds_count\{[^}]*\} (\d+)$`)

// storeOpsMetric sums the store operations serve's metrics counted.
func storeOpsMetric(t *testing.T, addr string) int {
	t.Helper()
	n := 0
	for _, m := range storeOpRE.FindAllStringSubmatch(string(scrape(t, addr)), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// Knative's OIDC sender tokens: a service-account token issued by the
// real kube-apiserver for the configured audience is accepted on the
// events listener; another audience, a forged token and none are refused,
// and /events is not on the main listener.
func TestServeEventsOIDC(t *testing.T) {
	k := servers.SharedKube(t)
	restCfg, err := kubeclient.Config(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kubeobj.Create(ctx, dyn, kubeobj.ServiceAccounts, kubeobj.Object("v1", "ServiceAccount", "default", "oidc-pingsource", nil)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kubeobj.Delete(ctx, dyn, kubeobj.ServiceAccounts, "default", "oidc-pingsource"); err != nil {
			t.Error(err)
		}
	})
	token := func(aud string) string {
		tok, err := kubeobj.Token(ctx, dyn, "default", "oidc-pingsource", []string{aud}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	eventsAddr := freeport.Addr(t)
	cfg := writeServeConfig(t, "catalogs: [{name: tiny, image: \"127.0.0.1:1/tiny:v1\"}]\nevents: {audience: catalogsync-events}\n")
	s := startServe(t, "--config", cfg, "--store", t.TempDir(), "--kubeconfig", k.Kubeconfig, "--events-addr", eventsAddr)
	good := token("catalogsync-events")
	parts := strings.Split(good, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	for i, c := range []struct {
		name, auth string
		want       int
	}{
		{"sender token", "Bearer " + good, 202},
		{"other audience", "Bearer " + token("someone-else"), 403},
		{"forged", "Bearer " + forged, 403},
		{"none", "", 401},
	} {
		hdr := map[string]string{"Content-Type": ceJSON["Content-Type"], "Authorization": c.auth}
		if code, body := do(t, "POST", "http://"+eventsAddr+"/events", ping(fmt.Sprint(i)), hdr); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	if code, _ := do(t, "POST", "http://"+s.addr+"/events", ping("main"), map[string]string{"Content-Type": ceJSON["Content-Type"], "Authorization": "Bearer " + good}); code != 404 {
		t.Errorf("/events on the main listener: %d, want 404", code)
	}
	if logs := s.logs.String(); strings.Contains(logs, parts[2]) {
		t.Error("a token's signature shows in the log")
	}
}
