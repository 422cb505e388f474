//go:build unix

package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lock takes the root's mutation lock: first this Store's semaphore, then an
// exclusive flock on root/.putif.lock, which excludes other Stores and other
// processes on the same root (flock locks belong to the open file, so two
// opens in one process exclude each other too). flock is polled
// non-blocking so that a cancelled ctx ends the wait.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() {
		if err != nil {
			<-s.sem
		}
	}()
	f, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	fd := int(f.Fd())
	for delay := 500 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock: flock: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		}
	}
	return func() {
		// Closing the file releases the flock.
		f.Close()
		<-s.sem
	}, nil
}
