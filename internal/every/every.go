// Package every runs a periodic check in a goroutine that its owner can stop and wait for: the
// SDK's lease heartbeat and counts flush, and a session lock's hold.
package every

import (
	"context"
	"time"
)

// Interval calls tick every interval in a goroutine until ctx ends, tick returns false, or stop is
// called; stop waits for a tick under way to return, and may be called once.
func Interval(ctx context.Context, interval time.Duration, tick func() bool) (stop func()) {
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
