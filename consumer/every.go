package consumer

import (
	"context"
	"time"
)

// every calls tick every interval in a goroutine until ctx ends, tick returns false, or stop is
// called; stop waits for a tick under way to return, and may be called once.
func every(ctx context.Context, interval time.Duration, tick func() bool) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !tick() {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
