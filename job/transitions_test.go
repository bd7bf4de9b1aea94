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
	t.Parallel()
	allowed := map[[2]jobtype.Status]bool{
		{jobtype.Planned, jobtype.Shadowing}:   true,
		{jobtype.Shadowing, jobtype.Shadowing}: true,
		{jobtype.Shadowed, jobtype.Shadowing}:  true,
		{jobtype.Shadowing, jobtype.Shadowed}:  true,
		{jobtype.Shadowing, jobtype.Planned}:   true,
		{jobtype.Shadowed, jobtype.Executing}:  true,
		{jobtype.Executing, jobtype.Executing}: true,
		{jobtype.Paused, jobtype.Executing}:    true,
		{jobtype.Executing, jobtype.Paused}:    true,
		{jobtype.Paused, jobtype.Paused}:       true,
		{jobtype.Executing, jobtype.Completed}: true,
		{jobtype.Paused, jobtype.Completed}:    true,
		{jobtype.Planned, jobtype.Cancelled}:   true,
		{jobtype.Shadowing, jobtype.Cancelled}: true,
		{jobtype.Shadowed, jobtype.Cancelled}:  true,
		{jobtype.Executing, jobtype.Cancelled}: true,
		{jobtype.Paused, jobtype.Cancelled}:    true,
	}
	for _, from := range jobtype.Statuses {
		for _, to := range jobtype.Statuses {
			want := allowed[[2]jobtype.Status{from, to}]
			if got := job.CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %t, want %t", from, to, got, want)
			}
		}
	}
}

func TestEventsStartFromAndLeadTo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event job.Event
		from  []jobtype.Status
		to    jobtype.Status
	}{
		{job.EventShadow, []jobtype.Status{jobtype.Planned, jobtype.Shadowing, jobtype.Shadowed}, jobtype.Shadowing},
		{job.EventVerdict, []jobtype.Status{jobtype.Shadowing}, jobtype.Shadowed},
		{job.EventExecute, []jobtype.Status{jobtype.Shadowed, jobtype.Executing}, jobtype.Executing},
		{job.EventPause, []jobtype.Status{jobtype.Executing}, jobtype.Paused},
		{job.EventResume, []jobtype.Status{jobtype.Paused}, jobtype.Executing},
		{job.EventCancel, []jobtype.Status{jobtype.Planned, jobtype.Shadowing, jobtype.Shadowed, jobtype.Executing, jobtype.Paused}, jobtype.Cancelled},
		{job.EventGuard, []jobtype.Status{jobtype.Executing, jobtype.Paused}, jobtype.Paused},
		{job.EventComplete, []jobtype.Status{jobtype.Executing, jobtype.Paused}, jobtype.Completed},
		{job.EventShadowStopped, []jobtype.Status{jobtype.Shadowing}, jobtype.Planned},
		{job.EventShadowStoppedShadowed, []jobtype.Status{jobtype.Shadowing}, jobtype.Shadowed},
	} {
		if got := job.From(tc.event); !slices.Equal(got, tc.from) {
			t.Errorf("From(%s) = %v, want %v", tc.event, got, tc.from)
		}
		if got := job.To(tc.event); got != tc.to {
			t.Errorf("To(%s) = %s, want %s", tc.event, got, tc.to)
		}
		for _, s := range jobtype.Statuses {
			if got, want := job.Allows(tc.event, s), slices.Contains(tc.from, s); got != want {
				t.Errorf("Allows(%s, %s) = %t, want %t", tc.event, s, got, want)
			}
		}
		tr := job.Transition(tc.event, "job-1", "why", "alice")
		if tr.ID != "job-1" || !slices.Equal(tr.From, tc.from) || tr.To != tc.to || tr.Reason != "why" || tr.By != "alice" {
			t.Errorf("Transition(%s) = %+v", tc.event, tr)
		}
	}
	if from := job.From("rewind"); len(from) != 0 || job.Allows("rewind", jobtype.Completed) {
		t.Errorf("an unknown event starts from %v", from)
	}
}

// From hands out a copy: a caller appending to it must not widen the table.
func TestFromIsACopy(t *testing.T) {
	t.Parallel()
	from := job.From(job.EventPause)
	from[0] = jobtype.Completed
	if job.Allows(job.EventPause, jobtype.Completed) || !job.Allows(job.EventPause, jobtype.Executing) {
		t.Fatal("changing From's result changed the table")
	}
}

func TestFinalAndUnfinished(t *testing.T) {
	t.Parallel()
	var unfinished []jobtype.Status
	for _, s := range jobtype.Statuses {
		final := s == jobtype.Completed || s == jobtype.Cancelled || s == jobtype.Failed
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
	t.Parallel()
	for _, s := range jobtype.Statuses {
		tr := job.TransitionFrom(job.EventExecute, s, "job-1", "started by alice", "alice")
		want := []jobtype.Status{}
		if job.Allows(job.EventExecute, s) {
			want = []jobtype.Status{s}
		}
		if !slices.Equal(tr.From, want) || tr.To != jobtype.Executing || tr.ID != "job-1" || tr.By != "alice" {
			t.Errorf("TransitionFrom(execute, %s) = %+v, want from %v", s, tr, want)
		}
	}
}

func TestShadowStoppedEventReturnsToThePriorStatus(t *testing.T) {
	t.Parallel()
	for prev, want := range map[jobtype.Status]jobtype.Status{jobtype.Planned: jobtype.Planned, jobtype.Shadowed: jobtype.Shadowed} {
		e, ok := job.ShadowStoppedEvent(prev)
		if !ok || job.To(e) != want || !slices.Equal(job.From(e), []jobtype.Status{jobtype.Shadowing}) {
			t.Errorf("prev %s: event %q %v leads to %s", prev, e, ok, job.To(e))
		}
	}
	for _, prev := range []jobtype.Status{jobtype.Shadowing, jobtype.Executing, jobtype.Completed} {
		if e, ok := job.ShadowStoppedEvent(prev); ok {
			t.Errorf("prev %s: event %q, want none", prev, e)
		}
	}
}
