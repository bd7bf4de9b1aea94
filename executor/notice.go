package executor

import (
	"fmt"
	"time"
)

// Notice is a condition of the run reported once when it begins and once when it ends, between
// the polls' progress: a log shows when a run stopped moving and when it moved again, without a
// line at every poll.
type Notice struct {
	Kind    NoticeKind
	Message string
}

// NoticeKind names what a Notice is about.
type NoticeKind string

// The kinds of notice: a stalled run and its end, a lease held past its time and its release.
const (
	NoticeStall      NoticeKind = "stall"
	NoticeStallOver  NoticeKind = "stall_over"
	NoticeLeaseStuck NoticeKind = "lease_stuck"
	NoticeLeaseFreed NoticeKind = "lease_freed"
)

// maxStallNoticeGap reports a stall within a minute whatever --settle-timeout is.
const maxStallNoticeGap = time.Minute

// stallNoticeAfter is how long no outcome lands before the stall is reported: well before
// --settle-timeout stops the run, so the operator can act, but past a few polls' jitter.
func stallNoticeAfter(o *Options) time.Duration {
	return min(max(o.SettleTimeout/4, 2*o.PollInterval), maxStallNoticeGap)
}

func (o *Options) notice(kind NoticeKind, format string, args ...any) {
	if o.Notice != nil {
		o.Notice(Notice{Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
}
