package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// check judges the round from the fake provider's own call log (billing_provider_charges), not
// from the ledger: every order charged exactly once, or never with its row uncertain (listed by
// reconcile --dry-run for a person) or failed; never twice.
func (r *roundEnv) check(ctx context.Context, jobID string) error {
	// A pool connection to a primary that just failed over breaks on first use: read again.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = r.checkOnce(ctx, jobID); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return err
}

func (r *roundEnv) checkOnce(ctx context.Context, jobID string) error {
	charges := map[string]int{}
	rows, err := r.records.Query(ctx, fmt.Sprintf(`select order_id, count(*) from %s_provider.billing_provider_charges group by 1`, r.schema))
	if err != nil {
		return fmt.Errorf("read the provider's log: %w", err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		charges[id] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	states := map[string]string{}
	// The state, and for a row still processing what a person debugging it needs: its lease's
	// owner and expiry, the calls it started, its last error.
	rows, err = r.pool.Query(ctx, fmt.Sprintf(`select e.event_id, e.state || coalesce('/' || e.outcome_kind, '') ||
		       case when e.state = 'processing' then format(' (lease %%s until %%s, now %%s, calls started %%s, last error %%s)',
		            e.lease_owner, e.lease_expires_at, now(), e.calls_started, coalesce(e.last_error, '-')) else '' end
		  from %[1]s.effects e join %[1]s.jobs j on j.consumer = e.consumer and j.effect_version_to = e.effect_version
		 where j.id = $1`, r.schema), jobID)
	if err != nil {
		return fmt.Errorf("read the ledger's rows: %w", err)
	}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return err
		}
		states[id] = state
	}
	if err := rows.Err(); err != nil {
		return err
	}
	listed, failed := r.reconcileListed(), r.failedListed(jobID)
	if r.api != nil {
		r.checkAPI(charges)
	}
	r.s.report.Orders += r.s.o.orders
	dumped := false
	for i := range r.s.o.orders {
		order, event := orderID(r.round, i), eventID(r.round, i)
		r.s.report.Checks++
		switch n, state := charges[order], states[event]; {
		case n > 1:
			r.s.violation(r.round, "charged-twice", "order %s (event %s) charged %d times; ledger row %q; %s", order, event, n, state, r.chargeEvidence(ctx, order, event))
		case n == 1:
		case state == "uncertain" && listed[event]:
		case state == "completed/business":
		case strings.HasPrefix(state, "received") && failed[event]:
			// Dead-lettered again by the consumer: a failed target status lists with why.
		case strings.HasPrefix(state, "processing"):
			r.s.violation(r.round, "target-stuck", "order %s (event %s) never charged, its row still %s after the faults stopped and the job's executes ended; lease owner's process: %s",
				order, event, state, r.describeOwner(state))
			if !dumped {
				dumped = true
				r.dumpConsumers()
			}
		default:
			r.s.violation(r.round, "target-lost", "order %s (event %s) never charged, and its ledger row is %q (not uncertain and listed by reconcile --dry-run, not failed)", order, event, state)
		}
	}
	return nil
}

// failedListed are the event IDs `replayctl status JOB --json` lists as failed targets.
func (r *roundEnv) failedListed(jobID string) map[string]bool {
	out, _ := r.replayctl("status", "--json", jobID)
	var st struct {
		Failed []struct {
			EventID string `json:"eventId"`
		} `json:"failedTargets"`
	}
	_ = json.Unmarshal(out, &st)
	failed := map[string]bool{}
	for _, f := range st.Failed {
		failed[f.EventID] = true
	}
	return failed
}

// reconcileListed are the event IDs `replayctl reconcile --dry-run` lists for a person.
func (r *roundEnv) reconcileListed() map[string]bool {
	out, _ := r.replayctl("reconcile", "--json", "--consumer", "billing", "--dry-run")
	var rep struct {
		Rows []struct {
			EventID string `json:"eventId"`
		} `json:"rows"`
	}
	_ = json.Unmarshal(out, &rep)
	listed := map[string]bool{}
	for _, row := range rep.Rows {
		listed[row.EventID] = true
	}
	return listed
}

// describeOwner finds the process behind a processing row's lease owner ("host-pid-hex"): whether
// it runs, whether it is stopped, and whether the soak tracks it as one of the round's consumers.
func (r *roundEnv) describeOwner(state string) string {
	_, rest, ok := strings.Cut(state, "(lease ")
	if !ok {
		return "no lease owner"
	}
	owner, _, _ := strings.Cut(rest, " ")
	parts := strings.Split(owner, "-")
	if len(parts) < 3 {
		return "owner " + owner + " is not host-pid-hex"
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil {
		return "owner " + owner + " has no pid"
	}
	tracked := "not one of the round's tracked consumers"
	r.mu.Lock()
	for i, c := range r.consumers {
		if c != nil && c.Process != nil && c.Process.Pid == pid {
			tracked = fmt.Sprintf("tracked as consumer %d", i)
		}
	}
	r.mu.Unlock()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Sprintf("pid %d not running (%s)", pid, tracked)
	}
	// /proc/PID/stat: "pid (comm) S ..." where S is the state (R, S, T stopped, Z zombie).
	procState := "?"
	if _, after, ok := strings.Cut(string(stat), ") "); ok && len(after) > 0 {
		procState = after[:1]
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return fmt.Sprintf("pid %d running, state %s, %s, command %q", pid, procState, tracked, strings.ReplaceAll(string(cmdline), "\x00", " "))
}

// chargeEvidence is what a person needs to tell how an order came to be charged twice: the
// provider's charges with their times, the ledger row (attempts, who completed it, the charge it
// recorded), and every log line of the round's consumers about the event.
func (r *roundEnv) chargeEvidence(ctx context.Context, order, event string) string {
	var b strings.Builder
	rows, err := r.records.Query(ctx, fmt.Sprintf(`select charge_id, charged_at from %s_provider.billing_provider_charges where order_id = $1 order by charged_at`, r.schema), order)
	if err == nil {
		for rows.Next() {
			var id string
			var at time.Time
			if rows.Scan(&id, &at) == nil {
				fmt.Fprintf(&b, "\n  provider charge %s at %s", id, at.UTC().Format("15:04:05.000000"))
			}
		}
		rows.Close()
	}
	var row string
	if err := r.pool.QueryRow(ctx, fmt.Sprintf(`select format('state %%s attempts %%s calls_started %%s effect_count %%s completed_by %%s updated_at %%s refs %%s',
	        state, attempts, calls_started, effect_count, coalesce(completed_by, '-'), updated_at, coalesce(external_refs::text, '-'))
	   from %s.effects where event_id = $1`, r.schema), event).Scan(&row); err == nil {
		fmt.Fprintf(&b, "\n  ledger row: %s", row)
	}
	logs, _ := filepath.Glob(filepath.Join(r.s.dir, fmt.Sprintf("consumer-%d-*.log", r.round)))
	for _, path := range logs {
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "event_id="+event+" ") {
				fmt.Fprintf(&b, "\n  %s: %s", filepath.Base(path), line)
			}
		}
	}
	return b.String()
}
