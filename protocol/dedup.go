package protocol

import (
	"fmt"
	"math"
	"time"
)

// UnratedWarnRate is the lowest fitting rate (targets per second) at which a run whose --rate is
// not known (at plan) or not limited is warned of: below it the targets fit the window at any
// rate an operator would pick.
const UnratedWarnRate = 1.0

// DedupWindow is what a replay can count on from JetStream's publish dedup: the stream that
// captures the replays drops a second publish with the same Nats-Msg-Id only within its duplicate
// window. A rerun of execute after a crash republishes the targets that have no ledger row yet;
// those first published longer ago than the window are stored a second time.
type DedupWindow struct {
	// Stream captures the replays; Window is its duplicate window.
	Stream        string  `json:"stream"`
	WindowSeconds float64 `json:"windowSeconds"`
	// Targets are the targets the run publishes.
	Targets int64 `json:"targets"`
	// Rate is the run's --rate in targets per second; 0 when unlimited, or at plan, not known yet.
	Rate float64 `json:"rate"`
	// ExpectedSeconds is how long publishing the targets takes at Rate; 0 when Rate is 0.
	ExpectedSeconds float64 `json:"expectedSeconds,omitempty"`
	// FittingRate is the lowest --rate at which the targets are published within the window.
	FittingRate float64 `json:"fittingRate"`
	// Exceeded says the run is expected to outlast the window: at Rate, or, when Rate is 0 and the
	// run is not limited by the consumer alone, because FittingRate is above UnratedWarnRate.
	Exceeded bool `json:"exceeded"`
}

// NewDedupWindow measures a run of targets at rate (0: not known) against stream's window.
// unratedWarns says whether a rate of 0 warns on FittingRate (plan, where the rate is not chosen
// yet) or not (execute without --rate, whose pace is the consumer's).
func NewDedupWindow(stream string, window time.Duration, targets int64, rate float64, unratedWarns bool) DedupWindow {
	d := DedupWindow{Stream: stream, WindowSeconds: window.Seconds(), Targets: targets, Rate: rate}
	if window > 0 {
		d.FittingRate = math.Ceil(float64(targets)/window.Seconds()*100) / 100
	}
	switch {
	case window <= 0 || targets == 0:
	case rate > 0:
		d.ExpectedSeconds = float64(targets) / rate
		d.Exceeded = d.ExpectedSeconds > d.WindowSeconds
	case unratedWarns:
		d.Exceeded = d.FittingRate > UnratedWarnRate
	}
	return d
}

// Warning is the operator's sentence when the run outlasts the window, "" otherwise: what can
// happen, what the ledger guarantees regardless, and what to do.
func (d DedupWindow) Warning() string {
	if !d.Exceeded {
		return ""
	}
	window := seconds(d.WindowSeconds)
	length := fmt.Sprintf("at any --rate below %g targets/s, publishing the %d targets takes longer than that", d.FittingRate, d.Targets)
	if d.Rate > 0 {
		length = fmt.Sprintf("at --rate %g, publishing the %d targets takes about %s", d.Rate, d.Targets, seconds(d.ExpectedSeconds))
	}
	return fmt.Sprintf("stream %s drops a second copy of a replay (same Nats-Msg-Id) only within its duplicate window of %s; %s: "+
		"a rerun of execute after a crash republishes the targets without a ledger row, and those first published more than %s before are stored twice. "+
		"The ledger still lets each event's external effect happen at most once (the second copy is answered from its row, counted as a duplicate delivery), "+
		"so no effect happens twice; to avoid the second copies, run at --rate %g or more, or raise the window (nats stream edit %s --dupe-window 10m)",
		d.Stream, window, length, window, d.FittingRate, d.Stream)
}

// seconds renders a span of seconds as a duration rounded to the second.
func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}
