package job

import (
	"slices"

	"github.com/replayctl/replayctl/jobtype"
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
func ShadowStoppedEvent(prev jobtype.Status) (Event, bool) {
	switch prev {
	case jobtype.Planned:
		return EventShadowStopped, true
	case jobtype.Shadowed:
		return EventShadowStoppedShadowed, true
	}
	return "", false
}

type transition struct {
	from []jobtype.Status
	to   jobtype.Status
}

func (t transition) allows(from jobtype.Status) bool { return slices.Contains(t.from, from) }

// transitions is the one table of the job lifecycle: the statuses each event starts from and
// the status it leads to. Failed is never entered by replayctl; the schema keeps it for jobs
// marked failed by hand.
var transitions = map[Event]transition{
	EventShadow:   {from: []jobtype.Status{jobtype.Planned, jobtype.Shadowing, jobtype.Shadowed}, to: jobtype.Shadowing},
	EventVerdict:  {from: []jobtype.Status{jobtype.Shadowing}, to: jobtype.Shadowed},
	EventExecute:  {from: []jobtype.Status{jobtype.Shadowed, jobtype.Executing}, to: jobtype.Executing},
	EventPause:    {from: []jobtype.Status{jobtype.Executing}, to: jobtype.Paused},
	EventResume:   {from: []jobtype.Status{jobtype.Paused}, to: jobtype.Executing},
	EventCancel:   {from: []jobtype.Status{jobtype.Planned, jobtype.Shadowing, jobtype.Shadowed, jobtype.Executing, jobtype.Paused}, to: jobtype.Cancelled},
	EventGuard:    {from: []jobtype.Status{jobtype.Executing, jobtype.Paused}, to: jobtype.Paused},
	EventComplete: {from: []jobtype.Status{jobtype.Executing, jobtype.Paused}, to: jobtype.Completed},

	EventShadowStopped:         {from: []jobtype.Status{jobtype.Shadowing}, to: jobtype.Planned},
	EventShadowStoppedShadowed: {from: []jobtype.Status{jobtype.Shadowing}, to: jobtype.Shadowed},
}

// From returns the statuses e starts from, for the ledger's conditional update
// (ledger.JobTransition.From). An unknown event starts from none.
func From(e Event) []jobtype.Status { return slices.Clone(transitions[e].from) }

// To returns the status e leads to.
func To(e Event) jobtype.Status { return transitions[e].to }

// Allows reports whether e may move a job in status from.
func Allows(e Event, from jobtype.Status) bool { return transitions[e].allows(from) }

// CanTransition reports whether some event moves a job from from to to.
func CanTransition(from, to jobtype.Status) bool {
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
func TransitionFrom(e Event, from jobtype.Status, id, reason, by string) ledger.JobTransition {
	t := Transition(e, id, reason, by)
	t.From = []jobtype.Status{}
	if Allows(e, from) {
		t.From = []jobtype.Status{from}
	}
	return t
}
