package status

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An outage warns at its first failure and at every 20th; the others are
// debug lines.
func TestLogFailureEvery20th(t *testing.T) {
	var buf bytes.Buffer
	w := &Writer{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for n := 1; n <= 45; n++ {
		w.logFailure(context.Background(), n, "read published pointer")
	}
	if got := strings.Count(buf.String(), "level=WARN"); got != 3 || !strings.Contains(buf.String(), "failures=40") {
		t.Fatalf("%d warnings, want 3 (failures 1, 20, 40):\n%s", got, buf.String())
	}
}

// The writer remembers the resourceVersions of its last 16 applies, so
// the informer's late echoes of any of them are recognised as its own.
func TestOursKeepsLast16(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	en := r.w.entryLocked("cat")
	var rvs []string
	for i := range 20 {
		st := &Status{Conditions: []metav1.Condition{{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
			Message: fmt.Sprint("apply ", i), LastTransitionTime: metav1.NewTime(r.clock())}}}
		o, err := r.w.apply(context.Background(), en, r.w.progressManager(), "", st)
		if err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, o.rv)
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if !slices.Equal(en.ours, rvs[4:]) {
		t.Fatalf("remembered %v, want the last 16 of %v", en.ours, rvs)
	}
}
