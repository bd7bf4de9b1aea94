package cmdutil

import (
	"fmt"
	"sync"
	"time"

	"github.com/replayctl/replayctl/internal/iostreams"
)

// StepProgress reports a long step: a bar on a terminal, or a line per --progress-interval in a
// log, labelled label and counting unit, whose total the domain package learns only once the
// step starts; and one line per other step. finish ends the display (a no-op if it never
// started).
func StepProgress(ios *iostreams.IOStreams, label, unit string) (advance func(done, total int64), stage func(description string), finish func()) {
	var bar iostreams.Progress
	// A domain package may report from several workers.
	var mu sync.Mutex
	advance = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil {
			bar = ios.StartProgress(label, total, unit)
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
		PrintStage(ios, description)
	}
	return advance, stage, finish
}

// PrintStage tells a person, or a log, which step a long command is at.
func PrintStage(ios *iostreams.IOStreams, description string) {
	switch {
	case ios.ShowsProgress():
		fmt.Fprintf(ios.ErrOut, "%s ...\n", description)
	case ios.ProgressInterval() > 0:
		LogLine(ios, "%s ...", description)
	}
}

// LogLine prints one timestamped line on stderr, for what a log must show as it happens.
func LogLine(ios *iostreams.IOStreams, format string, args ...any) {
	fmt.Fprintf(ios.ErrOut, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// LogLineOverBar is logLine for what happens while a bar may be drawn on a terminal: the bar's
// line does not end until it finishes, so the line starts one of its own instead of being
// appended to the bar and drawn over at its next redraw.
func LogLineOverBar(ios *iostreams.IOStreams, format string, args ...any) {
	if ios.ShowsProgress() {
		fmt.Fprintln(ios.ErrOut)
	}
	LogLine(ios, format, args...)
}
