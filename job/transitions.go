package job

import (
	"slices"

	"github.com/replayctl/replayctl/ledger"
)

// Event is something that moves a job: a step of the replay, an operator's control, a guard.
type Event string

// Events. Pause, resume and cancel are also the names of the operator's commands.
const (
	// EventShadow starts a shadow run, again if the job was shadowed before.
	EventShadow Event = "shadow"
	// EventVerdict records a shadow run's verdict, pass or fail.
	EventVerdict Event = "verdict"
	// EventExecute starts an execute run, or continues an interrupted one.
	EventExecute Event = "execute"
	EventPause   Event = "pause"
	EventResume  Event = "resume"
	EventCancel  Event = "cancel"
	// EventGuard is a guard stopping a run: the job pauses, even if an operator paused it first.
	EventGuard Event = "guard"
	// EventComplete is every target settled, the last poll possibly after a pause.
	EventComplete Event = "complete"
	// EventShadowStopped and EventShadowStoppedShadowed return a shadow run that stopped before
	// its verdict (interrupted, NATS or the ledger lost) to the status it started from, planned or
	// shadowed with its earlier verdict: otherwise the job would read "shadowing" with nothing
	// running. ShadowStoppedEvent picks one.
	EventShadowStopped         Event = "shadow-stopped"
	EventShadowStoppedShadowed Event = "shadow-stopped-shadowed"
)

// ShadowStoppedEvent is the event that returns a stopped shadow run's job to prev, the status it
// had before the run; false when there is none (prev was shadowing already: a run before this one
// stopped without a word, and nothing tells what came before it).
func ShadowStoppedEvent(prev Status) (Event, bool) {
	switch prev {
	case Planned:
		return EventShadowStopped, true
	case Shadowed:
		return EventShadowStoppedShadowed, true
	}
	return "", false
}

type transition struct {
	from []Status
	to   Status
}

func (t transition) allows(from Status) bool { return slices.Contains(t.from, from) }

// transitions is the one table of the job lifecycle: the statuses each event starts from and
// the status it leads to. Failed is never entered by replayctl; the schema keeps it for jobs
// marked failed by hand.
var transitions = map[Event]transition{
	EventShadow:   {from: []Status{Planned, Shadowing, Shadowed}, to: Shadowing},
	EventVerdict:  {from: []Status{Shadowing}, to: Shadowed},
	EventExecute:  {from: []Status{Shadowed, Executing}, to: Executing},
	EventPause:    {from: []Status{Executing}, to: Paused},
	EventResume:   {from: []Status{Paused}, to: Executing},
	EventCancel:   {from: []Status{Planned, Shadowing, Shadowed, Executing, Paused}, to: Cancelled},
	EventGuard:    {from: []Status{Executing, Paused}, to: Paused},
	EventComplete: {from: []Status{Executing, Paused}, to: Completed},

	EventShadowStopped:         {from: []Status{Shadowing}, to: Planned},
	EventShadowStoppedShadowed: {from: []Status{Shadowing}, to: Shadowed},
}

// From returns the statuses e starts from, for the ledger's conditional update
// (ledger.JobTransition.From). An unknown event starts from none.
func From(e Event) []Status { return slices.Clone(transitions[e].from) }

// To returns the status e leads to.
func To(e Event) Status { return transitions[e].to }

// Allows reports whether e may move a job in status from.
func Allows(e Event, from Status) bool { return transitions[e].allows(from) }

// CanTransition reports whether some event moves a job from from to to.
func CanTransition(from, to Status) bool {
	for _, t := range transitions {
		if t.to == to && t.allows(from) {
			return true
		}
	}
	return false
}

// Transition is the ledger's conditional update for e: job id moves to e's status only from one
// e starts from.
func Transition(e Event, id, reason, by string) ledger.JobTransition {
	return ledger.JobTransition{ID: id, From: From(e), To: To(e), Reason: reason, By: by}
}

// TransitionFrom is e's conditional update narrowed to the status the caller saw: the job moves
// only if nobody moved it since. From a status e does not start from, it matches no job.
func TransitionFrom(e Event, from Status, id, reason, by string) ledger.JobTransition {
	t := Transition(e, id, reason, by)
	t.From = []Status{}
	if Allows(e, from) {
		t.From = []Status{from}
	}
	return t
}
