package iostreams

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressThrottle bounds redraws: a million-target run calls Set far more often than a terminal
// can usefully repaint.
const progressThrottle = 100 * time.Millisecond

// Progress reports the advance of one long step.
type Progress interface {
	// Set records that n units of the total are done.
	Set(n int64)
	// Describe replaces the label, for a step whose state changes (publishing, paused).
	Describe(description string)
	// Finish ends the display, leaving the last count on screen.
	Finish()
}

// StartProgress starts reporting a step of total units (0 or less when the total is unknown).
// It draws a bar with rate and ETA on ErrOut when ErrOut is a terminal and output is not for
// machines; otherwise it returns a Progress that does nothing, so CI logs and --json runs stay
// free of carriage-return noise.
func (s *IOStreams) StartProgress(description string, total int64) Progress {
	if !s.ShowsProgress() {
		return noProgress{}
	}
	if total <= 0 {
		// progressbar's convention for "unknown length": a spinner with a count instead of a bar.
		total = -1
	}
	out := s.ErrOut
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }),
	)
	return &barProgress{bar: bar}
}

type noProgress struct{}

func (noProgress) Set(int64)       {}
func (noProgress) Describe(string) {}
func (noProgress) Finish()         {}

// barProgress throttles redraws itself rather than with progressbar's option, which drops the
// last update before Finish and would leave a stale count on screen.
type barProgress struct {
	bar *progressbar.ProgressBar

	mu       sync.Mutex
	n        int64
	lastDraw time.Time
}

// Set ignores the bar's errors: a display glitch must never fail the step it reports on.
func (p *barProgress) Set(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
	if time.Since(p.lastDraw) < progressThrottle && n < p.bar.GetMax64() {
		return
	}
	p.lastDraw = time.Now()
	_ = p.bar.Set64(n)
}

// Describe changes the label; it is drawn with the next count.
func (p *barProgress) Describe(description string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.Describe(description)
}

// Finish draws the last count and stops there rather than filling the bar (progressbar's own
// Finish does), so an interrupted step never looks complete. A bar that reached its total has
// already ended its line.
func (p *barProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Set64(p.n)
	if !p.bar.IsFinished() {
		_ = p.bar.Exit()
	}
}
