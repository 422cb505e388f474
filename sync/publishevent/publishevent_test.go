package publishevent_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/publishevent"
	"github.com/catalogsync/catalogsync/sync/source"
)

// sink is a real HTTP CloudEvents receiver decoding with the SDK.
type sink struct {
	*httptest.Server
	mu     sync.Mutex
	events []event.Event
	binary []bool
	fail   atomic.Int32 // answer 500 to this many requests first
	got    chan struct{}
}

func newSink(t *testing.T) *sink {
	s := &sink{got: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.fail.Add(-1) >= 0 {
			http.Error(w, "not yet", http.StatusInternalServerError)
			return
		}
		ev, err := cehttp.NewEventFromHTTPRequest(r)
		if err != nil {
			t.Errorf("sink: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.events = append(s.events, *ev)
		s.binary = append(s.binary, r.Header.Get("Ce-Type") != "")
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		s.got <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) wait(t *testing.T) event.Event {
	t.Helper()
	select {
	case <-s.got:
	case <-time.After(20 * time.Second):
		t.Fatal("no event reached the sink")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[len(s.events)-1]
}

func newPipeline(t *testing.T) *pipeline.Pipeline {
	src, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
}

func sampleImage(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return "ocidir://" + filepath.Join(filepath.Dir(file), "../../examples/sample-catalog") + ":v1"
}

// observed wraps em so the test knows when em.Observe has returned for a
// sync's terminal event (observers run on their own goroutine).
func observed(em *publishevent.Emitter) (pipeline.Observer, <-chan struct{}) {
	done := make(chan struct{}, 8)
	return pipeline.ObserverFunc(func(e pipeline.Event) {
		em.Observe(e)
		if e.Terminal() {
			done <- struct{}{}
		}
	}), done
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("terminal event not observed")
	}
}

func closeEmitter(t *testing.T, e *publishevent.Emitter) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// A real sync of the sample OCI layout reaches a real sink as one binary
// CloudEvent; the UpToDate resync that follows sends nothing.
func TestPublishedEventAfterRealSync(t *testing.T) {
	s := newSink(t)
	em, err := publishevent.New(s.URL, publishevent.WithSource("catalogsync/test"), publishevent.WithBaseURL("http://catalogs.example.test/"))
	if err != nil {
		t.Fatal(err)
	}
	pl := newPipeline(t)
	c := catalogspec.Catalog{Name: "sample", Image: catalogspec.ParseImage(sampleImage(t))}
	obs, done := observed(em)
	res, err := pl.Run(context.Background(), c, obs)
	if err != nil {
		t.Fatal(err)
	}
	ev := s.wait(t)
	waitDone(t, done)
	if ev.Type() != publishevent.Type || ev.Subject() != "sample" || ev.Source() != "catalogsync/test" || ev.ID() == "" {
		t.Fatalf("attributes: %s", ev)
	}
	var d publishevent.Data
	if err := ev.DataAs(&d); err != nil {
		t.Fatal(err)
	}
	if d.Digest != res.Digest || d.ResolvedRef != res.ResolvedRef || d.Action != "Published" ||
		d.URL != "http://catalogs.example.test/catalogs/sample" || d.Objects != res.Meta.Objects || d.Objects == 0 {
		t.Fatalf("data %+v, result digest %s", d, res.Digest)
	}
	if _, ok := d.PhasesMs[string(pipeline.PhaseIndexing)]; !ok {
		t.Fatalf("phases: %v", d.PhasesMs)
	}
	if res2, err := pl.Run(context.Background(), c, obs); err != nil || res2.Action != pipeline.ActionUpToDate {
		t.Fatalf("resync: %v %v", res2.Action, err)
	}
	waitDone(t, done)
	closeEmitter(t, em)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) != 1 || !s.binary[0] {
		t.Fatalf("want one binary-mode event, got %d (binary %v)", len(s.events), s.binary)
	}
	if st := em.Stats(); st.Sent != 1 || st.Failed != 0 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A sink failing twice with 500 gets the event on the third attempt.
func TestFailingSinkIsRetried(t *testing.T) {
	s := newSink(t)
	s.fail.Store(2)
	em, err := publishevent.New(s.URL, publishevent.WithRetry(5, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	res, err := newPipeline(t).Run(context.Background(), catalogspec.Catalog{Name: "sample", Image: catalogspec.ParseImage(sampleImage(t))}, em)
	if err != nil {
		t.Fatal(err)
	}
	var d publishevent.Data
	if err := func() error { ev := s.wait(t); return ev.DataAs(&d) }(); err != nil || d.Digest != res.Digest {
		t.Fatalf("data %+v: %v", d, err)
	}
	closeEmitter(t, em)
	if st := em.Stats(); st.Sent != 1 || st.Retries != 2 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A sink that accepts connections and never answers neither fails nor
// slows the sync; the event is given up on after its attempts.
func TestDeadSinkDoesNotFailOrSlowSync(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The sink holds every connection open, unanswered, until released;
	// then it drops them, and new ones at once.
	release := make(chan struct{})
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			select {
			case <-release:
				c.Close()
			default:
				held = append(held, c)
			}
			mu.Unlock()
		}
	}()
	// A delivery timeout longer than any test: a sync that waited for the
	// sink would not return until the sink is released below.
	em, err := publishevent.New("http://"+ln.Addr().String()+"/", publishevent.WithRetry(2, 10*time.Millisecond), publishevent.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pl := newPipeline(t)
	c := catalogspec.Catalog{Name: "sample", Image: catalogspec.ParseImage(sampleImage(t))}
	obs, done := observed(em)
	if _, err := pl.Run(context.Background(), c, obs); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	if st := em.Stats(); st.Sent != 0 || st.Failed != 0 {
		t.Fatalf("stats %+v before the sink answered", st)
	}
	mu.Lock()
	close(release)
	for _, c := range held {
		c.Close()
	}
	mu.Unlock()
	for i := 0; em.Stats().Failed == 0 && i < 6000; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	closeEmitter(t, em)
	if st := em.Stats(); st.Sent != 0 || st.Failed != 1 || st.Retries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// With the sender stuck on a dead sink, a full queue drops its oldest events
// and counts them.
func TestFullQueueDropsOldest(t *testing.T) {
	block := make(chan struct{})
	var delivered []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
		ev, err := cehttp.NewEventFromHTTPRequest(r)
		if err == nil {
			mu.Lock()
			delivered = append(delivered, ev.Subject())
			mu.Unlock()
		}
	}))
	defer srv.Close()
	em, err := publishevent.New(srv.URL, publishevent.WithQueue(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		em.Observe(pipeline.Event{Phase: pipeline.PhasePublished, Time: time.Now(),
			Result: &pipeline.Result{Catalog: name, Action: pipeline.ActionPublished, Digest: "sha256:00"}})
		// Let the sender take "a" before the rest queue up.
		if name == "a" {
			for em.Stats().Queued != 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	em.Observe(pipeline.Event{Phase: pipeline.PhasePublished, Result: &pipeline.Result{Catalog: "x", Action: pipeline.ActionUpToDate}})
	if st := em.Stats(); st.Dropped != 1 || st.Queued != 2 {
		t.Fatalf("stats %+v", st)
	}
	close(block)
	closeEmitter(t, em)
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 3 || delivered[0] != "a" || delivered[1] != "c" || delivered[2] != "d" {
		t.Fatalf("delivered %v", delivered)
	}
}

func TestInvalidSink(t *testing.T) {
	for _, bad := range []string{"ksink.example.test", "ftp://x.example.test", "http://"} {
		if _, err := publishevent.New(bad); !errors.Is(err, publishevent.ErrInvalidSink) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
