package ledger

// Test hooks into the group committer of a store opened by Open.

// SetGroupCommitFlushers sets how many statements of one kind may be in flight.
func SetGroupCommitFlushers(s *Store, n int) { s.group.flushers = n }

// SetGroupCommitBeforeSend runs f before each statement the group committer sends.
func SetGroupCommitBeforeSend(s *Store, f func(kind string, n int)) { s.group.beforeSend = f }

// GroupCommitPending counts the requests of kind waiting to be taken into a batch.
func GroupCommitPending(s *Store, kind string) int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	switch kind {
	case "call-started":
		return len(s.group.callStarted.pending)
	case "claim":
		return len(s.group.claim.pending)
	case "complete":
		return len(s.group.complete.pending)
	default:
		return len(s.group.heartbeat.pending)
	}
}

// DisableGroupCommit makes s send each SDK statement on its own, as before group commit.
func DisableGroupCommit(s *Store) { s.group, s.reads = nil, nil }

// HoldEventReads makes s send one read of events' rows at a time and runs f before each.
func HoldEventReads(s *Store, f func(n int)) { s.reads.flushers, s.reads.beforeSend = 1, f }

// EventReadsPending counts the reads waiting to be taken into a query.
func EventReadsPending(s *Store) int {
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	return len(s.reads.pending)
}
