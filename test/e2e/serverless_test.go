package e2e

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// statusChange is one version of a ClusterCatalog's status, as a watch
// delivered it.
type statusChange struct {
	name, rv          string
	progress, reason  string
	owner             string // field manager owning Progressing
	resolved, serving string
}

// statusLog records every status change of every ClusterCatalog.
type statusLog struct {
	mu  sync.Mutex
	all []statusChange
	rv  map[string]string // name -> the last resourceVersion delivered
}

// caughtUp reports whether the watch has delivered name's version rv.
func (l *statusLog) caughtUp(name, rv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rv[name] == rv
}

func (l *statusLog) of(name string) []statusChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []statusChange
	for _, c := range l.all {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// watchStatus watches every ClusterCatalog until the test ends, re-watching
// from the last version after a disconnect.
func (s *stack) watchStatus() *statusLog {
	l := &statusLog{rv: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		rv := ""
		last := map[string]string{}
		for ctx.Err() == nil {
			w, err := s.dyn.Resource(status.GVR).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Error {
					rv = ""
					break
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Bookmark || ev.Type == watch.Deleted {
					continue
				}
				l.mu.Lock()
				l.rv[u.GetName()] = rv
				l.mu.Unlock()
				st := parseStatus(u)
				p := st.cond("Progressing")
				c := statusChange{name: u.GetName(), rv: rv, progress: p.Message, reason: p.Reason,
					owner: progressOwner(u), resolved: st.Resolved, serving: st.cond("Serving").Status}
				key := fmt.Sprint(c.progress, c.reason, c.owner, c.resolved, c.serving)
				if last[c.name] == key {
					continue // not a status change (metadata, managedFields only)
				}
				last[c.name] = key
				l.mu.Lock()
				l.all = append(l.all, c)
				l.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return l
}

// progressOwner is the field manager that owns the Progressing condition.
func progressOwner(u *unstructured.Unstructured) string {
	owner := ""
	for _, mf := range u.GetManagedFields() {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `k:{\"type\":\"Progressing\"}`) &&
			mf.Operation == metav1.ManagedFieldsOperationApply {
			owner = mf.Manager
		}
	}
	return owner
}

var (
	reDigest = regexp.MustCompile(`sha256:[0-9a-f]{12}`)
	rePulled = regexp.MustCompile(`layer (\d+)/\d+: ([0-9.]+)`)
)

// msgRank orders the phases of one sync's messages; waits are neutral.
func msgRank(msg string) (rank int, digest string, progress float64) {
	if d := reDigest.FindString(msg); d != "" {
		digest = d
	}
	switch strings.SplitN(msg, " ", 2)[0] {
	case "Waiting":
		return -1, "", 0
	case "Resolving":
		return 0, "", 0
	case "Pulling":
		m := rePulled.FindStringSubmatch(msg)
		if m != nil {
			layer, _ := strconv.Atoi(m[1])
			progress, _ = strconv.ParseFloat(m[2], 64)
			return 1, digest, float64(layer)*1e9 + progress
		}
		return 1, digest, 0
	case "Unpacking":
		return 2, digest, 0
	case "Validating":
		return 3, digest, 0
	case "Indexing":
		return 4, digest, 0
	case "Publishing":
		return 5, digest, 0
	case "Published":
		return 6, digest, 0
	}
	return 7, digest, 0 // a failure ends a sync too
}

// alternations counts, in one catalog's Progressing history, messages that
// go back within one sync (an earlier phase or byte count of the same
// digest, a digest's sync shown again after another's) and changes of the
// writing replica within one sync. A sync of the killed replica, taken
// over after the kill, may change writer once (allowance).
func alternations(changes []statusChange, killed string) (n int, why []string) {
	type seg struct {
		digest, owner string
		rank          int
		progress      float64
	}
	var cur *seg
	done := map[string]bool{}
	allowance := 1
	prevMsg := ""
	for _, c := range changes {
		if c.progress == "" || c.progress == prevMsg {
			continue
		}
		prevMsg = c.progress
		rank, d, prog := msgRank(c.progress)
		if rank < 0 {
			continue
		}
		if rank == 0 {
			// A new sync starts; its digest comes with its next message.
			if cur != nil && cur.digest != "" {
				done[cur.digest] = true
			}
			cur = &seg{owner: c.owner}
			continue
		}
		if cur == nil || (cur.digest != "" && d != cur.digest) {
			if cur != nil && cur.digest != "" {
				done[cur.digest] = true
			}
			cur = &seg{owner: c.owner, rank: -1}
		}
		if cur.digest == "" {
			cur.digest = d
			if d != "" && done[d] {
				n++
				why = append(why, fmt.Sprintf("%q: a finished sync of %s shown again", c.progress, d))
			}
		}
		if c.owner != cur.owner {
			if strings.HasSuffix(cur.owner, "/"+killed) && allowance > 0 {
				allowance--
			} else {
				n++
				why = append(why, fmt.Sprintf("%q: writer %s after %s in one sync", c.progress, c.owner, cur.owner))
			}
			cur.owner = c.owner
		}
		if rank < cur.rank || (rank == cur.rank && prog < cur.progress) {
			if strings.HasSuffix(c.owner, "/"+killed) && allowance > 0 {
				allowance-- // the restarted replica pulls again
			} else {
				n++
				why = append(why, fmt.Sprintf("%q after rank %d", c.progress, cur.rank))
			}
		}
		cur.rank, cur.progress = rank, prog
		if rank >= 6 {
			// Published or failed: the sync ended.
			if cur.digest != "" {
				done[cur.digest] = true
			}
			cur = nil
		}
	}
	return n, why
}

// Scenario 6: three replicas on one bucket and one apiserver; three
// ClusterCatalogs pushed three times each, the pushes overlapping the
// syncs; every notification goes to all three replicas; one replica is
// SIGKILLed mid-run and restarted. A watch records every status change.
func TestThreeReplicas(t *testing.T) {
	s := newStack(t, options{replicas: 3})
	log := s.watchStatus()
	names := []string{"cat-a", "cat-b", "cat-c"}
	for _, n := range names {
		s.createCatalog(n, "acme/"+n+":v1")
	}
	// Slow pulls down (a few MB each at 3 MB/s) so pushes overlap syncs.
	s.proxy.Inject(servers.Throttle(3<<20), 0, servers.BlobGET)
	defer s.proxy.Clear()
	s.proxy.ResetCounts()

	pushed := map[string][]string{}
	var mu sync.Mutex
	killedAt := time.Time{}
	const killed = "replica-1"
	for round := range 3 {
		var wg sync.WaitGroup
		for i, n := range names {
			img := imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), 30+round*3+i), "/configs")
			wg.Go(func() {
				d := s.push("acme/"+n+":v1", img)
				mu.Lock()
				pushed[n] = append(pushed[n], d)
				mu.Unlock()
			})
		}
		wg.Wait()
		switch round {
		case 1:
			// Kill replica-1 while it syncs something, if it gets to.
			deadline := time.Now().Add(20 * time.Second)
			mid := false
			for time.Now().Before(deadline) && !mid {
				if mid = syncing(t, s.replicas[1], names); !mid {
					time.Sleep(100 * time.Millisecond)
				}
			}
			s.replicas[1].Kill()
			t.Logf("replica-1 killed (mid-sync: %v)", mid)
			killedAt = time.Now()
		case 2:
			s.replicas[1].Start()
			t.Logf("replica-1 down for %v", time.Since(killedAt).Round(time.Millisecond))
		}
		if round < 2 {
			// The next pushes land mid-sync: go on once one runs (or
			// after 1.5 s, when every sync of this round has ended).
			live := s.replicas
			if round == 1 {
				live = []*servers.Catalogsync{s.replicas[0], s.replicas[2]}
			}
			for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if slices.ContainsFunc(live, func(r *servers.Catalogsync) bool { return syncing(t, r, names) }) {
					break
				}
			}
		}
	}

	// Every catalog ends Serving the pointer's digest, the last pushed.
	for _, n := range names {
		last := pushed[n][len(pushed[n])-1]
		s.waitServing(n, last, 3*time.Minute)
		if p, _ := s.pointer(n); p.Digest != last {
			t.Fatalf("%s: pointer %s, want the last push %s", n, p.Digest, last)
		}
	}
	// Late writers would show now: every replica's syncs have ended, and
	// a sync's end is written to the status before its lease is given up.
	s.waitSettled(log, names)

	// Pulls: every layer GET through the proxy, per blob.
	pulls := map[string]int{}
	for _, r := range s.proxy.Requests() {
		if r.Class == servers.BlobGET && r.Method == "GET" {
			pulls[r.Path]++
		}
	}
	extra := 0
	for p, n := range pulls {
		if n > 2 {
			t.Errorf("blob %s pulled %d times, want once (plus one after the kill)", p, n)
		}
		if n == 2 {
			extra++
		}
	}
	if extra > 2 { // the killed sync's config and layer
		t.Errorf("%d blobs pulled twice, want at most one image's (the killed sync)", extra)
	}

	totalChanges, totalAlt, published := 0, 0, 0
	for _, n := range names {
		ch := log.of(n)
		totalChanges += len(ch)
		alt, why := alternations(ch, killed)
		totalAlt += alt
		if alt > 0 {
			t.Errorf("%s: %d alternations: %v\n%s", n, alt, why, describeChanges(ch))
		}
		// Regressions: resolvedSource never goes to an older push.
		order := map[string]int{}
		for i, d := range pushed[n] {
			order[d] = i
		}
		last, seen := -1, map[string]bool{}
		for _, c := range ch {
			if c.resolved == "" {
				continue
			}
			d := c.resolved[strings.LastIndex(c.resolved, "@")+1:]
			seen[d] = true
			if i, ok := order[d]; ok && i < last {
				t.Errorf("%s: resolvedSource went back to push %d after push %d\n%s", n, i, last, describeChanges(ch))
			} else if ok {
				last = i
			}
		}
		published += len(seen)
		t.Logf("%s: %d status changes for %d published digests (of %d pushed)", n, len(ch), len(seen), len(pushed[n]))
	}
	t.Logf("3 replicas, 9 pushes: %d status changes, %d alternations, %.1f status changes per published sync; pulls per blob %v",
		totalChanges, totalAlt, float64(totalChanges)/float64(max(published, 1)), pulls)

	// Every replica answers /all identically.
	for _, n := range names {
		var first []byte
		for i, r := range s.replicas {
			code, b := get(t, r.URL+"/catalogs/"+n+"/api/v1/all")
			if code != 200 {
				t.Fatalf("%s: replica %d: %d", n, i, code)
			}
			if i == 0 {
				first = b
			} else if !bytes.Equal(first, b) {
				t.Fatalf("%s: replica %d answers differently from replica 0", n, i)
			}
		}
	}
}

// waitSettled waits until no replica runs or queues a sync of names and,
// with a log, the watch has delivered each catalog's current status.
func (s *stack) waitSettled(log *statusLog, names []string) {
	s.t.Helper()
	eventually(s.t, "every replica idle and the watch caught up", time.Minute, func() bool {
		for _, r := range s.replicas {
			for _, n := range names {
				if v := catalogView(s.t, r.URL, n); v.Running != nil || v.Queued != nil {
					return false
				}
			}
		}
		for _, n := range names {
			if log == nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			u, err := s.dyn.Resource(status.GVR).Get(ctx, n, metav1.GetOptions{})
			cancel()
			if err != nil || !log.caughtUp(n, u.GetResourceVersion()) {
				return false
			}
		}
		return true
	})
}

// syncing reports whether the replica runs a sync of one of names.
func syncing(t *testing.T, r *servers.Catalogsync, names []string) bool {
	for _, n := range names {
		if v := catalogView(t, r.URL, n); v.Running != nil {
			return true
		}
	}
	return false
}

func describeChanges(ch []statusChange) string {
	var b strings.Builder
	for _, c := range ch {
		fmt.Fprintf(&b, "  rv=%s %s %q by %s; resolved %s serving %s\n", c.rv, c.reason, c.progress, c.owner,
			c.resolved[max(0, strings.LastIndex(c.resolved, "@")):], c.serving)
	}
	return b.String()
}
