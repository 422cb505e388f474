package events

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/storagetest"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// Without a token, an audience or insecure: true, /events is not served.
func TestEventsRefuseUnauthenticatedByDefault(t *testing.T) {
	e := &fakeEngine{}
	if _, err := New(Config{}, catalogs, e, e); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Fatalf("no credentials configured: %v", err)
	}
	if _, err := New(Config{Audience: "catalogsync"}, catalogs, e, e); err == nil {
		t.Fatal("an audience without a token reviewer was accepted")
	}
	if _, err := New(Config{Insecure: true}, catalogs, e, e); err != nil {
		t.Fatalf("insecure: %v", err)
	}
}

// enginePoller polls a real engine, as serve does.
type enginePoller struct{ e *engine.Engine }

func (p enginePoller) PollDue(ctx context.Context) { p.e.PollDue(ctx) }

// A flood of PingSource events costs the store what one poll costs: pings
// within PingInterval of the last poll are coalesced.
func TestEventsPingFloodCoalesced(t *testing.T) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	counting := storagetest.NewCounting(st)
	set := engine.StaticCatalogs{
		{Name: "a", Image: "registry.example.test/a:v1", PollInterval: time.Minute},
		{Name: "b", Image: "registry.example.test/b:v1", PollInterval: time.Minute},
		{Name: "c", Image: "registry.example.test/c:v1", PollInterval: time.Minute},
	}
	// The syncs a poll queues settle for an hour, so they never run and
	// the store sees only the poll's own reads.
	eng := engine.New(nil, set, counting, engine.WithSettle(time.Hour, time.Hour))
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h, err := New(Config{Insecure: true}, lister{}, &fakeEngine{}, enginePoller{eng}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ops := func() int {
		stats, gets, _ := counting.Snapshot()
		n := 0
		for _, v := range stats {
			n += v
		}
		for _, v := range gets {
			n += v
		}
		return n
	}
	ping := func(i int) {
		r := request(t, "knative-pingsource-ping")
		r.Header.Set("Ce-Id", "ping-"+strconv.Itoa(i))
		if w := serve(h, r); w.Code != 202 {
			t.Fatalf("ping %d: %d", i, w.Code)
		}
	}
	ping(0)
	one := ops()
	if one == 0 {
		t.Fatal("a poll read nothing from the store")
	}
	for i := 1; i <= 200; i++ {
		ping(i)
	}
	if got := ops(); got != one {
		t.Fatalf("200 more pings within the interval made %d store operations, one poll makes %d", got-one, one)
	}
	mu.Lock()
	now = now.Add(31 * time.Second)
	mu.Unlock()
	ping(201)
	if got := ops(); got != 2*one {
		t.Fatalf("a ping after the interval: %d store operations, want %d", got, 2*one)
	}
}

// Events that change nothing say why at info level, at most once per
// interval per reason, and every outcome is counted.
func TestEventsOutcomesAndNotices(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	outcomes := map[string]int{}
	h, _ := newHandler(t, Config{}, lister{{Name: "x", Image: "registry.example.test/x:v1"}}, WithLogger(log),
		WithOutcome(func(source, outcome string) {
			if source != Source {
				t.Errorf("source %q", source)
			}
			outcomes[outcome]++
		}))
	for i := range 3 {
		r := request(t, "harbor-cloudevents-push") // names no configured catalog
		setBody(strings.Replace(readBody(t, r), "4b2f89a6", "push-"+strconv.Itoa(i), 1))(r)
		serve(h, r)
	}
	// A redelivered push is a duplicate...
	r := request(t, "harbor-cloudevents-push")
	setBody(strings.Replace(readBody(t, r), "4b2f89a6", "push-0", 1))(r)
	serve(h, r)
	// ...an event of a type never acted on is ignored each time (its id is
	// not recorded).
	serve(h, request(t, "harbor-cloudevents-deleted"))
	serve(h, request(t, "harbor-cloudevents-deleted"))
	if n := strings.Count(buf.String(), `msg="cloudevent matched no catalog"`); n != 1 {
		t.Errorf("%d info lines for unmatched events, want 1:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), `msg="cloudevent ignored"`); n != 1 {
		t.Errorf("%d info lines for ignored events, want 1:\n%s", n, buf.String())
	}
	want := map[string]int{webhook.OutcomeUnmatched: 3, webhook.OutcomeIgnored: 2, webhook.OutcomeDuplicate: 1}
	for k, v := range want {
		if outcomes[k] != v {
			t.Errorf("outcome %s counted %d times, want %d (all: %v)", k, outcomes[k], v, outcomes)
		}
	}
}

func readBody(t *testing.T, r *http.Request) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
