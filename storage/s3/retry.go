package s3

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/catalogsync/catalogsync/internal/stall"
)

// stallRetryer is the SDK's retryer, except for a request that stalled
// (stall.ErrStalled): it is sent again once, at once, and then fails.
// The stall timeout has waited already; one more try tells a dropped
// connection from a store that stopped answering, and more tries would
// only hold the caller (a sync, a reader) for more stall timeouts.
type stallRetryer struct{ aws.Retryer }

func (r stallRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if errors.Is(err, stall.ErrStalled) {
		if attempt >= 2 {
			return 0, err
		}
		return 0, nil
	}
	return r.Retryer.RetryDelay(attempt, err)
}
