package iostreams

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	// progressThrottle bounds redraws: a million-target run calls Set far more often than a
	// terminal can usefully repaint.
	progressThrottle = 100 * time.Millisecond
	// barWidth is the bar's widest, in cells; on a narrow terminal it shrinks to minBarWidth, then
	// goes, so the line never wraps.
	barWidth    = 30
	minBarWidth = 10
	// rateSpan is how far back a rate the bar measures itself looks: long enough to smooth
	// batches, short enough to follow a run that slows down.
	rateSpan = 10 * time.Second
)

// Progress reports the advance of one long step in units (targets, events, rows).
type Progress interface {
	// Set records that n units of the total are done.
	Set(n int64)
	// Describe replaces the label, for a step whose state changes (publishing, throttled).
	Describe(description string)
	// SetRate gives the rate, in units per second, measured by the step itself (execute's
	// settled targets per second); without it the display measures the rate of Set.
	SetRate(perSecond float64)
	// SetPaused marks the step paused or not: a paused step shows no rate and no ETA, since
	// nothing predicts when a person resumes it.
	SetPaused(paused bool)
	// Finish ends the display, leaving the last count on screen.
	Finish()
}

// StartProgress starts reporting a step of total units (0 or less when the total is unknown),
// counted as unit ("targets", "events"). On a terminal whose output is not for machines it draws
// a bar on ErrOut, redrawn in place. Otherwise, when a progress interval is set
// (SetProgressInterval, --progress-interval), it prints one plain line per interval so nohup
// and CI logs show a long run; with no interval it shows nothing.
func (s *IOStreams) StartProgress(description string, total int64, unit string) Progress {
	st := &progressState{label: description, total: max(total, 0), unit: unit, startedAt: time.Now()}
	switch {
	case s.ShowsProgress():
		return &barProgress{out: s.ErrOut, state: st}
	case s.progressInterval > 0:
		p := &lineProgress{out: s.ErrOut, state: st, stop: make(chan struct{}), done: make(chan struct{})}
		go p.tick(s.progressInterval)
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Set(int64)       {}
func (noProgress) Describe(string) {}
func (noProgress) SetRate(float64) {}
func (noProgress) SetPaused(bool)  {}
func (noProgress) Finish()         {}

// rateSample is one count at one time, for a rate the display measures itself.
type rateSample struct {
	at time.Time
	n  int64
}

// progressState is what both displays show; its methods are called under the display's lock.
type progressState struct {
	label     string
	total     int64
	unit      string
	n         int64
	paused    bool
	rate      float64
	rateGiven bool
	samples   []rateSample
	startedAt time.Time
}

func (st *progressState) set(n int64, now time.Time) {
	st.n = n
	if len(st.samples) == 0 || now.Sub(st.samples[len(st.samples)-1].at) >= progressThrottle {
		st.samples = append(st.samples, rateSample{at: now, n: n})
	}
	for len(st.samples) > 2 && now.Sub(st.samples[1].at) > rateSpan {
		st.samples = st.samples[1:]
	}
}

// currentRate is the rate given by the step, else the one measured over the last samples.
func (st *progressState) currentRate() float64 {
	if st.rateGiven || len(st.samples) < 2 {
		return st.rate
	}
	first, last := st.samples[0], st.samples[len(st.samples)-1]
	if d := last.at.Sub(first.at).Seconds(); d > 0 && last.n > first.n {
		return float64(last.n-first.n) / d
	}
	return 0
}

// figures renders the count, rate and ETA: "450/1000 targets (45%), 37.0/s, ETA 15s".
func (st *progressState) figures() string {
	var b strings.Builder
	if st.total > 0 {
		fmt.Fprintf(&b, "%d/%d %s (%d%%)", st.n, st.total, st.unit, percent(st.n, st.total))
	} else {
		fmt.Fprintf(&b, "%d %s", st.n, st.unit)
	}
	if st.paused {
		b.WriteString(", paused, no ETA")
		return b.String()
	}
	rate := st.currentRate()
	if rate > 0 {
		fmt.Fprintf(&b, ", %s/s", formatRate(rate))
		if st.total > st.n {
			eta := time.Duration(float64(st.total-st.n) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", ETA %s", roundETA(eta))
		}
	}
	return b.String()
}

func percent(n, total int64) int64 {
	if total <= 0 {
		return 0
	}
	return min(100, n*100/total)
}

func formatRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// roundETA keeps an ETA readable: seconds under ten minutes, minutes above.
func roundETA(d time.Duration) time.Duration {
	if d > 10*time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// barProgress redraws one line in place on a terminal.
type barProgress struct {
	out   io.Writer
	state *progressState

	mu       sync.Mutex
	lastDraw time.Time
	finished bool
}

func (p *barProgress) Set(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.state.set(n, now)
	if now.Sub(p.lastDraw) < progressThrottle && (p.state.total <= 0 || n < p.state.total) {
		return
	}
	p.drawLocked()
}

func (p *barProgress) Describe(description string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.label = description
	p.drawLocked()
}

func (p *barProgress) SetRate(perSecond float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.rate, p.state.rateGiven = perSecond, true
}

func (p *barProgress) SetPaused(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.paused != paused {
		p.state.paused = paused
		p.drawLocked()
	}
}

// Finish draws the last count and ends the line; it never fills the bar, so an interrupted
// step never looks complete.
func (p *barProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.drawLocked()
	fmt.Fprintln(p.out)
	p.finished = true
}

// drawLocked ignores write errors: a display glitch must never fail the step it reports on.
func (p *barProgress) drawLocked() {
	if p.finished {
		return
	}
	p.lastDraw = time.Now()
	fmt.Fprintf(p.out, "\r%s\x1b[K", barLine(p.state, Width(p.out)-1))
}

// barLine is the bar's line within width columns: the label, the bar (narrower, or none, when
// the figures need the room) and the figures, cut at the width as a last resort.
func barLine(st *progressState, width int) string {
	figures := st.figures()
	cells := min(barWidth, width-utf8.RuneCountInString(st.label)-len(" []")-1-utf8.RuneCountInString(figures))
	bar := ""
	if st.total > 0 && cells >= minBarWidth {
		filled := int(percent(st.n, st.total) * int64(cells) / 100)
		bar = " [" + strings.Repeat("=", filled) + strings.Repeat(" ", cells-filled) + "]"
	}
	line := st.label + bar + " " + figures
	if r := []rune(line); len(r) > width {
		line = string(r[:width])
	}
	return line
}

// lineProgress prints one plain line per interval, and a last one at Finish if it printed any:
// a run shorter than the interval shows its result and nothing else.
type lineProgress struct {
	out   io.Writer
	state *progressState
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	printed bool
	ended   bool
}

func (p *lineProgress) tick(interval time.Duration) {
	defer close(p.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.printLocked("")
			p.mu.Unlock()
		}
	}
}

func (p *lineProgress) printLocked(suffix string) {
	// A timestamp, because a nohup log has none of its own.
	fmt.Fprintf(p.out, "%s %s: %s%s\n", time.Now().UTC().Format(time.RFC3339), p.state.label, p.state.figures(), suffix)
	p.printed = true
}

func (p *lineProgress) Set(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.set(n, time.Now())
}

func (p *lineProgress) Describe(description string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.label = description
}

func (p *lineProgress) SetRate(perSecond float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.rate, p.state.rateGiven = perSecond, true
}

func (p *lineProgress) SetPaused(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.paused = paused
}

func (p *lineProgress) Finish() {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		p.printLocked(fmt.Sprintf(", stopped after %s", time.Since(p.state.startedAt).Round(time.Second)))
	}
}
