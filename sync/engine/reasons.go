package engine

import (
	"errors"

	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Bounds on what triggers leave on an operation: reasons come from
// requests (webhook and CloudEvent fields, REST bodies), so an operation
// a burst joins stays small however many triggers join it and however
// long their fields are.
const (
	// MaxReasons is how many distinct reasons an operation keeps; later
	// ones are only counted (Operation.MoreReasons).
	MaxReasons = 8
	// MaxReasonBytes is the longest reason kept; longer ones are cut.
	MaxReasonBytes = 256
	// MaxErrorBytes is the longest error text an operation keeps: errors
	// may quote what a registry or store answered.
	MaxErrorBytes = 2048
)

// addReason records why the operation was asked for: the first MaxReasons
// distinct reasons, each cut to MaxReasonBytes, and a count of the rest.
// The scan is over at most MaxReasons entries, so a storm of triggers
// costs constant time each under the engine's lock.
func (op *Operation) addReason(reason string) {
	reason = truncate.UTF8(reason, MaxReasonBytes)
	for _, r := range op.Reasons {
		if r == reason {
			return
		}
	}
	if len(op.Reasons) >= MaxReasons {
		op.MoreReasons++
		return
	}
	op.Reasons = append(op.Reasons, reason)
}

// boundedError returns se for the operation history, its text cut to
// MaxErrorBytes, so the history is bounded in bytes (count times the
// bounded size of one operation).
func boundedError(se *pipeline.Error) *pipeline.Error {
	if se.Err == nil || len(se.Err.Error()) <= MaxErrorBytes {
		return se
	}
	c := *se
	c.Err = errors.New(truncate.UTF8(se.Err.Error(), MaxErrorBytes))
	return &c
}
