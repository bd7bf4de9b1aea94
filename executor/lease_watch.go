package executor

import (
	"context"
	"sort"
	"time"

	"github.com/replayctl/replayctl/ledger"
)

// maxLeaseCheckGap bounds how often the job's lease owners are read: a grouped pass over the
// job's rows, too heavy for every poll of a large job.
const maxLeaseCheckGap = 10 * time.Second

// leaseWatch remembers which consumer instances hold lapsed leases of the job, so a stuck lease
// is reported once when it appears and once when it is gone, not at every check.
type leaseWatch struct {
	checked time.Time
	stuck   map[string]bool
}

// watchLeases reads the job's lease owners at most every maxLeaseCheckGap (every 5 polls when
// polls are quicker) while rows are processing, and reports an owner whose leases lapsed while
// still processing (its instance died or hangs mid-call) and the end of it.
func (w *watcher) watchLeases(ctx context.Context, e ledger.JobEffectCounts) {
	s := w.s
	lw := &w.leases
	if e.Processing == 0 {
		w.leasesFreed("no target is in progress any more")
		return
	}
	if time.Since(lw.checked) < min(5*s.opts.PollInterval, maxLeaseCheckGap) {
		return
	}
	lw.checked = time.Now()
	shares, err := s.store.EffectsJobOwners(ctx, s.m.Consumer, s.m.EffectVersion.To, s.m.ID)
	if err != nil {
		return // a read the next check repeats; the poll itself reports a ledger that stays away
	}
	now := map[string]bool{}
	for _, sh := range shares {
		if sh.Lapsed == 0 {
			continue
		}
		now[sh.Owner] = true
		if !lw.stuck[sh.Owner] {
			s.opts.notice(NoticeLeaseStuck, "stuck lease: consumer instance %s holds %d in-progress targets of job %s whose lease lapsed, "+
				"the oldest leased %s ago; if the instance is gone, `replayctl reconcile` settles those with a call started",
				ownerName(sh.Owner), sh.Lapsed, s.m.ID, (time.Duration(sh.OldestLeaseSeconds) * time.Second).Round(time.Second))
		}
	}
	for _, owner := range sortedOwners(lw.stuck) {
		if !now[owner] {
			s.opts.notice(NoticeLeaseFreed, "stuck lease over: consumer instance %s holds no lapsed lease of job %s any more", ownerName(owner), s.m.ID)
		}
	}
	lw.stuck = now
}

// leasesFreed reports the end of every stuck lease reported, for why.
func (w *watcher) leasesFreed(why string) {
	for _, owner := range sortedOwners(w.leases.stuck) {
		w.s.opts.notice(NoticeLeaseFreed, "stuck lease over: consumer instance %s: %s", ownerName(owner), why)
	}
	w.leases.stuck = nil
}

func sortedOwners(set map[string]bool) []string {
	owners := make([]string, 0, len(set))
	for o := range set {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	return owners
}

func ownerName(owner string) string {
	if owner == "" {
		return "(unnamed)"
	}
	return owner
}
