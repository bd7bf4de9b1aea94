package cli

import (
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/internal/iostreams"
)

// stepProgress reports a long step on a terminal: a bar labelled label, whose total the domain
// package learns only once the step starts, and one line per other step. finish ends the bar (a
// no-op if it never started). Off a terminal, and with --json, it shows nothing.
func stepProgress(ios *iostreams.IOStreams, label string) (advance func(done, total int64), stage func(description string), finish func()) {
	var bar iostreams.Progress
	// A domain package may report from several workers.
	var mu sync.Mutex
	advance = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil {
			bar = ios.StartProgress(label, total)
		}
		bar.Set(done)
	}
	finishLocked := func() {
		if bar != nil {
			bar.Finish()
			bar = nil
		}
	}
	finish = func() {
		mu.Lock()
		defer mu.Unlock()
		finishLocked()
	}
	stage = func(description string) {
		mu.Lock()
		defer mu.Unlock()
		finishLocked()
		if ios.ShowsProgress() {
			fmt.Fprintf(ios.ErrOut, "%s ...\n", description)
		}
	}
	return advance, stage, finish
}
