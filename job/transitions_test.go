package job_test

import (
	"slices"
	"testing"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
)

// TestCanTransitionEveryPair lists every move the lifecycle allows; every other pair of statuses
// must be refused, so a row added to the table without a row here fails.
func TestCanTransitionEveryPair(t *testing.T) {
	allowed := map[[2]job.Status]bool{
		{job.Planned, job.Shadowing}:   true,
		{job.Shadowing, job.Shadowing}: true,
		{job.Shadowed, job.Shadowing}:  true,
		{job.Shadowing, job.Shadowed}:  true,
		{job.Shadowing, job.Planned}:   true,
		{job.Shadowed, job.Executing}:  true,
		{job.Executing, job.Executing}: true,
		{job.Paused, job.Executing}:    true,
		{job.Executing, job.Paused}:    true,
		{job.Paused, job.Paused}:       true,
		{job.Executing, job.Completed}: true,
		{job.Paused, job.Completed}:    true,
		{job.Planned, job.Cancelled}:   true,
		{job.Shadowing, job.Cancelled}: true,
		{job.Shadowed, job.Cancelled}:  true,
		{job.Executing, job.Cancelled}: true,
		{job.Paused, job.Cancelled}:    true,
	}
	for _, from := range job.Statuses {
		for _, to := range job.Statuses {
			want := allowed[[2]job.Status{from, to}]
			if got := job.CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %t, want %t", from, to, got, want)
			}
		}
	}
}

func TestEventsStartFromAndLeadTo(t *testing.T) {
	for _, tc := range []struct {
		event job.Event
		from  []job.Status
		to    job.Status
	}{
		{job.EventShadow, []job.Status{job.Planned, job.Shadowing, job.Shadowed}, job.Shadowing},
		{job.EventVerdict, []job.Status{job.Shadowing}, job.Shadowed},
		{job.EventExecute, []job.Status{job.Shadowed, job.Executing}, job.Executing},
		{job.EventPause, []job.Status{job.Executing}, job.Paused},
		{job.EventResume, []job.Status{job.Paused}, job.Executing},
		{job.EventCancel, []job.Status{job.Planned, job.Shadowing, job.Shadowed, job.Executing, job.Paused}, job.Cancelled},
		{job.EventGuard, []job.Status{job.Executing, job.Paused}, job.Paused},
		{job.EventComplete, []job.Status{job.Executing, job.Paused}, job.Completed},
		{job.EventShadowStopped, []job.Status{job.Shadowing}, job.Planned},
		{job.EventShadowStoppedShadowed, []job.Status{job.Shadowing}, job.Shadowed},
	} {
		if got := job.From(tc.event); !slices.Equal(got, tc.from) {
			t.Errorf("From(%s) = %v, want %v", tc.event, got, tc.from)
		}
		if got := job.To(tc.event); got != tc.to {
			t.Errorf("To(%s) = %s, want %s", tc.event, got, tc.to)
		}
		for _, s := range job.Statuses {
			if got, want := job.Allows(tc.event, s), slices.Contains(tc.from, s); got != want {
				t.Errorf("Allows(%s, %s) = %t, want %t", tc.event, s, got, want)
			}
		}
		tr := job.Transition(tc.event, "job-1", "why", "alice")
		if tr.ID != "job-1" || !slices.Equal(tr.From, tc.from) || tr.To != tc.to || tr.Reason != "why" || tr.By != "alice" {
			t.Errorf("Transition(%s) = %+v", tc.event, tr)
		}
	}
	if from := job.From("rewind"); len(from) != 0 || job.Allows("rewind", job.Completed) {
		t.Errorf("an unknown event starts from %v", from)
	}
}

// From hands out a copy: a caller appending to it must not widen the table.
func TestFromIsACopy(t *testing.T) {
	from := job.From(job.EventPause)
	from[0] = job.Completed
	if job.Allows(job.EventPause, job.Completed) || !job.Allows(job.EventPause, job.Executing) {
		t.Fatal("changing From's result changed the table")
	}
}

func TestFinalAndUnfinished(t *testing.T) {
	var unfinished []job.Status
	for _, s := range job.Statuses {
		final := s == job.Completed || s == job.Cancelled || s == job.Failed
		if got := job.Final(s); got != final {
			t.Errorf("Final(%s) = %t, want %t", s, got, final)
		}
		if !final {
			unfinished = append(unfinished, s)
		}
	}
	// plan keeps the targets of these jobs out of a new plan; the ledger cannot import this
	// package, so its list is held to the table here.
	if !slices.Equal(jobtype.Unfinished, unfinished) {
		t.Fatalf("jobtype.Unfinished = %v, the table leaves %v unfinished", jobtype.Unfinished, unfinished)
	}
}

// Execute moves the job from the status its gates saw, not from any it may start from: a job an
// operator moved in between is refused by the ledger.
func TestTransitionFromNarrowsToTheStatusSeen(t *testing.T) {
	for _, s := range job.Statuses {
		tr := job.TransitionFrom(job.EventExecute, s, "job-1", "started by alice", "alice")
		want := []job.Status{}
		if job.Allows(job.EventExecute, s) {
			want = []job.Status{s}
		}
		if !slices.Equal(tr.From, want) || tr.To != job.Executing || tr.ID != "job-1" || tr.By != "alice" {
			t.Errorf("TransitionFrom(execute, %s) = %+v, want from %v", s, tr, want)
		}
	}
}

func TestShadowStoppedEventReturnsToThePriorStatus(t *testing.T) {
	for prev, want := range map[job.Status]job.Status{job.Planned: job.Planned, job.Shadowed: job.Shadowed} {
		e, ok := job.ShadowStoppedEvent(prev)
		if !ok || job.To(e) != want || !slices.Equal(job.From(e), []job.Status{job.Shadowing}) {
			t.Errorf("prev %s: event %q %v leads to %s", prev, e, ok, job.To(e))
		}
	}
	for _, prev := range []job.Status{job.Shadowing, job.Executing, job.Completed} {
		if e, ok := job.ShadowStoppedEvent(prev); ok {
			t.Errorf("prev %s: event %q, want none", prev, e)
		}
	}
}
