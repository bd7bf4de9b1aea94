package planner

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
)

// scanSelection is the operator's selection as the scan applies it to each message.
type scanSelection struct {
	include, exclude map[string]bool
	group            string
	where            *whereFilter
	toSubject        string
}

func newScanSelection(o *Options) scanSelection {
	return scanSelection{include: idSet(o.IDs), exclude: idSet(o.ExcludeIDs), group: o.FailureGroup, where: o.where,
		toSubject: o.ToSubject}
}

// idSet is ids as a set; nil for no list.
func idSet(ids []string) map[string]bool {
	if ids == nil {
		return nil
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// selected applies the selection to a usable message with event ID id and failure reason
// reason, counting what it leaves out.
func (s *scanner) selected(msg jetstream.Msg, id, reason string) bool {
	c, sel := &s.counts, &s.sel
	if sel.include[id] || sel.exclude[id] {
		if c.Found == nil {
			c.Found = map[string]bool{}
		}
		c.Found[id] = true
	}
	switch {
	case sel.include != nil && !sel.include[id], sel.exclude[id],
		sel.group != "" && dlq.FailureGroup(reason) != sel.group:
		c.NotSelected++
		return false
	}
	if sel.where == nil {
		return true
	}
	outcome, err := sel.where.match(s.ctx, msg.Data(), msg.Headers())
	if s.ctx.Err() != nil {
		// Interrupted mid-expression: the scan stops at its next message; nothing is counted.
		return false
	}
	switch outcome {
	case whereMatched:
		return true
	case whereNotJSON:
		c.WhereNotJSON++
	case whereError:
		c.WhereErrors++
		if c.WhereError == "" {
			c.WhereError = err.Error()
		}
	default:
		c.NotSelected++
	}
	return false
}
