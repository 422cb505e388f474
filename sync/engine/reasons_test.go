package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// TestTriggerReasonsBounded: a storm of triggers with long, distinct
// reasons joins one queued operation without growing it: at most
// MaxReasons reasons of at most MaxReasonBytes, the rest counted.
func TestTriggerReasonsBounded(t *testing.T) {
	// A settle time longer than the test keeps the operation queued, so
	// every trigger joins it and no pipeline runs (the engine is left
	// waiting when the test ends: stopping it would start the sync).
	ctx := context.Background()
	e := New(nil, StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("registry.invalid/c:v1")}}, nil, WithSettle(time.Hour, time.Hour))
	e.Start(ctx)
	var id string
	for i := range 600 {
		reason := fmt.Sprintf("cloudevent subject %d ", i) + strings.Repeat("é", 128<<10)
		op, err := e.Trigger(ctx, "c", reason)
		if err != nil {
			t.Fatal(err)
		}
		if id == "" {
			id = op.ID
		} else if op.ID != id {
			t.Fatalf("trigger %d made a new operation", i)
		}
	}
	op, _ := e.Operation(id)
	if len(op.Reasons) != MaxReasons || op.MoreReasons != 600-MaxReasons {
		t.Fatalf("reasons %d, more %d", len(op.Reasons), op.MoreReasons)
	}
	for _, r := range op.Reasons {
		if len(r) > MaxReasonBytes || !utf8.ValidString(r) {
			t.Fatalf("reason of %d bytes, valid UTF-8 %v", len(r), utf8.ValidString(r))
		}
	}
	b, _ := json.Marshal(op)
	if len(b) > 4<<10 {
		t.Fatalf("operation is %d bytes as JSON", len(b))
	}
}

func TestAddReasonDedupes(t *testing.T) {
	var op Operation
	for range 3 {
		op.addReason("webhook registry")
		op.addReason("api:manual")
	}
	if len(op.Reasons) != 2 || op.MoreReasons != 0 {
		t.Fatalf("%+v", op)
	}
	long := strings.Repeat("y", 1000)
	op.addReason(long)
	op.addReason(long + "z") // the same once cut
	if len(op.Reasons) != 3 || len(op.Reasons[2]) != MaxReasonBytes {
		t.Fatalf("%d reasons, last %d bytes", len(op.Reasons), len(op.Reasons[2]))
	}
}

func TestBoundedError(t *testing.T) {
	se := &pipeline.Error{Phase: pipeline.PhasePulling, Reason: pipeline.ReasonInternal, Retryable: true, Err: errors.New(strings.Repeat("registry said ", 10_000))}
	b := boundedError(se)
	if len(b.Err.Error()) > MaxErrorBytes || !b.Retryable || b.Phase != se.Phase || b.Reason != se.Reason {
		t.Fatalf("%d bytes, %+v", len(b.Err.Error()), b)
	}
	if short := (&pipeline.Error{Err: errors.New("x")}); boundedError(short) != short {
		t.Fatal("short errors are kept as they are")
	}
}
