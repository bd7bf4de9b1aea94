package executor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// GateSubject is the gate that refuses a job whose original subjects no stream captures: every
// publish would fail.
const GateSubject = "original-subject-captured"

// firstTargetsShown is how many targets a preflight names.
const firstTargetsShown = 10

// driftExamples is how many drifted targets a refusal names.
const driftExamples = 10

// session is one execute run's shared state.
type session struct {
	store Ledger
	js    jetstream.JetStream
	opts  *Options
	m     *manifest.Manifest
	job   ledger.Job
	// stream is the stream that captures the targets' original subjects ("" when no target is
	// left to publish).
	stream string
	// noRowsAhead: the job had never been executed and its version had no row for it when this
	// run began, so only this run's own publishes can make rows, all behind its read position.
	noRowsAhead bool
	// budget is the run's call budget, the passing verdict's (budget.go).
	budget CallBudget
	// traced: a tracer provider that exports is installed, so publish batches and replayed
	// messages get spans (each sampled or not by the provider).
	traced bool
}

// refuse returns gate's refusal and records it in the audit log: a refused run is a decision too.
func (s *session) refuse(ctx context.Context, gate, format string, args ...any) error {
	g := &GateError{Gate: gate, Message: fmt.Sprintf(format, args...)}
	s.audit(ctx, "execute.refused", map[string]any{"gate": gate, "message": g.Message, "dryRun": s.opts.DryRun})
	return g
}

// audit appends an entry with the pool, outliving a cancelled run: an interrupted run's last
// decisions are still recorded. A failed audit write cannot undo the decision, so it is dropped.
func (s *session) audit(ctx context.Context, action string, details map[string]any) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_ = s.store.AuditAppend(actx, ledger.AuditEntry{At: s.opts.Now().UTC(), Actor: s.opts.Actor, JobID: s.m.ID,
		ManifestDigest: s.m.Digest, Action: action, Details: details})
}

// checkGates runs every gate but the confirmation, in order, and returns what a run would do.
func (s *session) checkGates(ctx context.Context) (Preflight, error) {
	m := s.m
	rec, err := job.CheckRecorded(ctx, s.store, m)
	if recErr, ok := errors.AsType[*job.RecordedError](err); ok {
		return Preflight{}, s.refuse(ctx, GateJob, "%v", recErr)
	}
	if err != nil {
		return Preflight{}, err
	}
	s.job = rec
	if err := s.checkLedgerIdentity(ctx); err != nil {
		return Preflight{}, err
	}
	s.useStoredPace(rec.Pace)
	if err := s.checkStatus(ctx); err != nil {
		return Preflight{}, err
	}
	verdict, err := s.checkVerdict(ctx)
	if err != nil {
		return Preflight{}, err
	}
	approvals, err := s.checkApprovals(ctx, verdict)
	if err != nil {
		return Preflight{}, err
	}
	if err := s.checkAudit(ctx); err != nil {
		return Preflight{}, err
	}
	if err := s.checkVersion(ctx); err != nil {
		return Preflight{}, err
	}
	others, err := s.store.JobsActiveForConsumer(ctx, m.Consumer, m.ID)
	if err != nil {
		return Preflight{}, err
	}
	if len(others) > 0 {
		return Preflight{}, s.refuseBusyConsumer(ctx, others[0])
	}
	drift, err := s.checkDrift(ctx)
	if err != nil {
		return Preflight{}, err
	}
	p, err := s.preflight(ctx, verdict, drift)
	p.Approvals = approvals
	return p, err
}

// checkLedgerIdentity refuses a job read from a restored copy of the ledger it was planned in: its
// consumers write their outcomes to the original, so a run from the copy would publish and then
// wait for outcomes that never come.
func (s *session) checkLedgerIdentity(ctx context.Context) error {
	planned, current, err := s.store.JobsLedgerIdentity(ctx, s.job.ID)
	if err != nil || planned == "" || planned == current {
		return err
	}
	return s.refuse(ctx, GateJob, "job %s was planned in ledger %s (cluster system identifier, database, schema), and this ledger is %s: a restored copy, whose consumers never answer; run execute against the ledger the job was planned in, or plan again here",
		s.job.ID, planned, current)
}

func (s *session) checkStatus(ctx context.Context) error {
	rec := s.job
	if job.Allows(job.EventExecute, rec.Status) {
		return nil
	}
	switch rec.Status {
	case jobtype.Planned, jobtype.Shadowing:
		return s.refuse(ctx, GateStatus, "job %s is %s: it has no finished shadow run; run `replayctl shadow` on its manifest first", rec.ID, rec.Status)
	case jobtype.Paused:
		return s.refuse(ctx, GateStatus, "job %s is paused%s; resume it with `replayctl resume %s`, then run execute again",
			rec.ID, statusBecause(rec), rec.ID)
	default:
		return s.refuse(ctx, GateStatus, "job %s is already %s%s; a job runs once: plan a new job for what is left", rec.ID, rec.Status, statusBecause(rec))
	}
}

// statusBecause renders who set a job's status, when and why, for messages.
func statusBecause(job ledger.Job) string {
	var b strings.Builder
	if job.StatusBy != "" {
		fmt.Fprintf(&b, " by %s", job.StatusBy)
	}
	if !job.StatusAt.IsZero() {
		fmt.Fprintf(&b, " at %s", job.StatusAt.UTC().Format(time.RFC3339))
	}
	if job.StatusReason != "" {
		fmt.Fprintf(&b, " (%s)", job.StatusReason)
	}
	return b.String()
}

func (s *session) checkVerdict(ctx context.Context) (VerdictRef, error) {
	m := s.m
	v, err := s.store.ShadowVerdictsLatest(ctx, m.ID)
	if errors.Is(err, ledger.ErrNoVerdict) {
		return VerdictRef{}, s.refuse(ctx, GateShadow, "job %s has no shadow verdict; run `replayctl shadow` on its manifest first", m.ID)
	}
	if err != nil {
		return VerdictRef{}, err
	}
	ref := VerdictRef{ID: v.ID, At: v.CreatedAt, Actor: v.Actor}
	s.budget = budgetOf(v, m.ExpectedExternalCalls, m.Stats.Targets, s.opts.Guards.MaxCallsOver)
	if v.ManifestDigest != m.Digest {
		return ref, s.refuse(ctx, GateShadow, "the latest shadow verdict of job %s (#%d) is for manifest digest %s, not %s; shadow this manifest again",
			m.ID, v.ID, v.ManifestDigest, m.Digest)
	}
	if !v.Pass {
		return ref, s.refuse(ctx, GateShadow, "the latest shadow verdict of job %s (#%d, %s by %s) failed: %s; fix the consumer or the thresholds and shadow again",
			m.ID, v.ID, v.CreatedAt.UTC().Format(time.RFC3339), v.Actor, strings.Join(v.Reasons, "; "))
	}
	return ref, nil
}

func (s *session) checkVersion(ctx context.Context) error {
	m := s.m
	highest, err := s.store.EffectVersionsHighestOutsideJob(ctx, m.Consumer, m.EffectVersion.To, m.ID)
	if err != nil {
		return err
	}
	if highest >= m.EffectVersion.To {
		return s.refuse(ctx, GateVersion, "the ledger holds effect version %d for consumer %s, not below this job's version %d: another replay or a deploy used it since plan; plan again (plan picks a higher version)",
			highest, m.Consumer, m.EffectVersion.To)
	}
	return nil
}

func (s *session) refuseBusyConsumer(ctx context.Context, other ledger.Job) error {
	return s.refuse(ctx, GateConsumer, "job %s of consumer %s is %s%s: one replay per consumer at a time; let it finish, or cancel it with `replayctl cancel %s`",
		other.ID, other.Consumer, other.Status, statusBecause(other), other.ID)
}

func (s *session) checkDrift(ctx context.Context) (Drift, error) {
	m := s.m
	sum, err := s.store.JobTargetsDrift(ctx, m.ID, m.Consumer, m.EffectVersion.To, fingerprint.Algorithm, driftExamples)
	if err != nil {
		return Drift{}, err
	}
	d := Drift{Checked: sum.Checked, Drifted: sum.Drifted, ByKind: sum.ByKind, Examples: sum.Examples, MaxRatio: s.opts.MaxDriftRatio}
	if d.Examples == nil {
		d.Examples = []ledger.DriftTarget{}
	}
	if d.Checked > 0 {
		d.Ratio = float64(d.Drifted) / float64(d.Checked)
	}
	if d.Drifted > 0 && d.Ratio > d.MaxRatio {
		return d, s.refuse(ctx, GateDrift, "the plan is stale: %d of %d targets changed in the ledger since plan (%s)%s; plan again, or pass --max-drift %.4g to skip them",
			d.Drifted, d.Checked, kindCounts(d.ByKind), driftExample(d.Examples), roundUp(d.Ratio))
	}
	return d, nil
}

func kindCounts(byKind map[string]int64) string {
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s: %d", k, byKind[k])
	}
	return strings.Join(parts, ", ")
}

func driftExample(examples []ledger.DriftTarget) string {
	if len(examples) == 0 {
		return ""
	}
	e := examples[0]
	return fmt.Sprintf(", e.g. %s (%s): planned [%s], now [%s]", e.EventID, e.Kind, e.Planned, e.Current)
}

// roundUp gives a --max-drift value that admits ratio despite printing with few digits.
func roundUp(ratio float64) float64 {
	const step = 1e-4
	return float64(int64(ratio/step)+1) * step
}

// preflight computes what the run would do once every gate passed.
func (s *session) preflight(ctx context.Context, verdict VerdictRef, drift Drift) (Preflight, error) {
	m, rec := s.m, s.job
	ts, e, err := job.ReadCounts(ctx, s.store, rec)
	if err != nil {
		return Preflight{}, err
	}
	p := Preflight{JobID: m.ID, ManifestDigest: m.Digest, Consumer: m.Consumer, EffectVersion: m.EffectVersion,
		WriteForbidden: m.WriteForbidden, JobStatus: rec.Status, Resume: rec.Status == jobtype.Executing, Verdict: verdict,
		Targets: rec.Targets, Counts: job.ProgressOf(rec.Targets, ts, e, false), Drift: drift,
		ExpectedExternalCalls: m.ExpectedExternalCalls, CallBudget: s.budget.Budget, Budget: s.budget,
		Guards: s.opts.Guards, Durable: Durable{Name: s.opts.Durable}, Rate: s.opts.Rate, MaxInFlight: s.opts.MaxInFlight,
		FirstTargets: []PlannedPublish{}, Warnings: []string{}}
	p.Counts.CallBudget = p.CallBudget
	rowsUnderVersion := e.Settled() + e.Processing + e.Retrying
	p.ToPublish = max(0, unsettled(ts)-drift.Drifted-rowsUnderVersion)
	p.Canary = canarySize(s.opts.Canary, rec.Targets, p.ToPublish)
	s.noRowsAhead = rec.Status == jobtype.Shadowed && rowsUnderVersion == 0
	first, err := s.store.JobTargetsPageToPublish(ctx, s.publishPage(0, firstTargetsShown))
	if err != nil {
		return Preflight{}, err
	}
	for _, t := range first {
		p.FirstTargets = append(p.FirstTargets, PlannedPublish{EventID: t.EventID, Subject: t.OriginalSubject,
			StreamSeq: t.StreamSeq, MsgID: protocol.MsgID(rec.ID, t.EventID)})
	}
	if len(first) > 0 {
		if err := s.checkSubject(ctx, first[0].OriginalSubject, &p); err != nil {
			return p, err
		}
	} else if err := s.checkDurableOnly(ctx, &p); err != nil {
		return p, err
	}
	return p, nil
}

// checkSubject finds the stream the replay publishes into and the durable that throttles it.
func (s *session) checkSubject(ctx context.Context, subject string, p *Preflight) error {
	stream, err := s.js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return s.refuse(ctx, GateSubject, "no JetStream stream captures %s, the original subject of target %s: every publish would be lost; create the consumer's stream, or check --nats-url",
			subject, p.FirstTargets[0].EventID)
	}
	if err != nil {
		return fmt.Errorf("find the stream that captures %s: %w", subject, err)
	}
	s.stream = stream
	if err := s.checkDedupWindow(ctx, p); err != nil {
		return err
	}
	return s.lookUpDurable(ctx, stream, p)
}

// checkDurableOnly reports whether the durable exists when nothing is left to publish (a rerun
// waiting for outcomes): nothing is refused, since nothing will be published, but "not found"
// must not be said of a durable that exists.
func (s *session) checkDurableOnly(ctx context.Context, p *Preflight) error {
	subject, err := s.store.JobTargetsAnySubject(ctx, s.job.ID)
	if err != nil || subject == "" {
		return err
	}
	stream, err := s.js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find the stream that captures %s: %w", subject, err)
	}
	return s.lookUpDurable(ctx, stream, p)
}

func (s *session) lookUpDurable(ctx context.Context, stream string, p *Preflight) error {
	// Bounded, as every read of the durable is: in a cluster whose consumers were just created,
	// a request's answer was lost and the run waited for its caller's deadline (five minutes in
	// the fleet test) instead of failing in seconds, to be run again.
	ctx, cancel := context.WithTimeout(ctx, durableInfoTimeout)
	defer cancel()
	p.Durable.Stream = stream
	if _, err := s.js.Consumer(ctx, stream, s.opts.Durable); err == nil {
		p.DurableFound = true
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("read durable consumer %q of stream %s: %w", s.opts.Durable, stream, err)
	}
	return nil
}

// checkDedupWindow measures this run against the duplicate window of the stream its replays land
// in, and warns when publishing at --rate outlasts it. It never refuses: the ledger keeps a
// second copy of a replay from a second effect; the window only keeps the copy off the stream.
func (s *session) checkDedupWindow(ctx context.Context, p *Preflight) error {
	stream, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return fmt.Errorf("read the duplicate window of stream %s: %w", s.stream, err)
	}
	d := protocol.NewDedupWindow(s.stream, stream.CachedInfo().Config.Duplicates, p.ToPublish, s.opts.Rate, false)
	p.DedupWindow = &d
	if d.Exceeded {
		p.Warnings = append(p.Warnings, d.Warning())
	}
	return nil
}
