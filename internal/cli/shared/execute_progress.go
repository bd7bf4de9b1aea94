package shared

import (
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/jobtype"
)

// ExecuteProgress shows execute's progress: settled targets of all, labelled with the run's
// state (publishing, throttled, paused, waiting), with the settled rate and an ETA except while
// paused; on a terminal as a bar, in a log as a line per --progress-interval. Why the run is
// paused or throttled is printed once, when its state changes (the reason's figures change at
// every poll).
type ExecuteProgress struct {
	ios *iostreams.IOStreams

	mu    sync.Mutex
	bar   iostreams.Progress
	label string
	state string
}

// NewExecuteProgress returns execute's progress on ios.
func NewExecuteProgress(ios *iostreams.IOStreams) *ExecuteProgress { return &ExecuteProgress{ios: ios} }

// Update shows pr.
func (p *ExecuteProgress) Update(pr executor.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	label := "execute: " + pr.State
	if pr.Uncertain > 0 || pr.Failed > 0 {
		label += fmt.Sprintf(" (%d failed, %d uncertain)", pr.Failed, pr.Uncertain)
	}
	if p.bar == nil {
		p.bar = p.ios.StartProgress(label, pr.Targets, "targets")
	} else if label != p.label {
		p.bar.Describe(label)
	}
	p.label = label
	p.bar.SetRate(pr.Rate)
	p.bar.SetPaused(pr.State == string(jobtype.Paused))
	p.bar.Set(pr.Targets - pr.Remaining)
	if pr.State != p.state && pr.Reason != "" {
		switch {
		case p.ios.ShowsProgress():
			fmt.Fprintf(p.ios.ErrOut, "\n%s\n", clip.Line(pr.Reason))
		case p.ios.ProgressInterval() > 0:
			cmdutil.LogLine(p.ios, "execute: %s", clip.Line(pr.Reason))
		}
	}
	p.state = pr.State
}

// Stage shows what the run is doing between progress updates.
func (p *ExecuteProgress) Stage(description string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && p.ios.ShowsProgress() {
		// A stage while the bar is drawn (a pace changed by replayctl pace) starts a line of its
		// own; the bar redraws below it.
		fmt.Fprintln(p.ios.ErrOut)
	}
	cmdutil.PrintStage(p.ios, description)
}

// Finish ends the bar, if one was drawn.
func (p *ExecuteProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// Notice logs a stall or a stuck lease as it begins and ends, whatever --progress-interval says:
// they are what an operator reading the log afterwards looks for.
func (p *ExecuteProgress) Notice(n executor.Notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmdutil.LogLineOverBar(p.ios, "execute: %s", clip.Line(n.Message))
}
