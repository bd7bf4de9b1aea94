package planner

import (
	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/sshsig"

	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// Result is a recorded plan.
type Result struct {
	Manifest *manifest.Manifest
	// Warnings are facts the operator should read before shadowing, in plain sentences.
	Warnings []string
	// DedupWindow measures the job against the duplicate window of the stream its replays land
	// in; nil when no stream captures them.
	DedupWindow *protocol.DedupWindow
	// DryRun says nothing was recorded: no manifest file, no job, no audit entry.
	DryRun bool
}

// Plan scans the DLQ, classifies every event against the ledger, writes the sealed manifest to
// opts.OutputPath and records the job (status planned) with its targets and an audit entry. Either
// all of that happens or, apart from a manifest file removed again on failure, none of it.
func Plan(ctx context.Context, js jetstream.JetStream, store Ledger, opts Options) (*Result, error) {
	if err := opts.Normalise(); err != nil {
		return nil, err
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if !opts.NewConsumer {
		if err := store.CheckConsumer(ctx, opts.Consumer); err != nil {
			if errors.Is(err, ledger.ErrUnknownConsumer) {
				return nil, fmt.Errorf("%w; for the first replay of a consumer the ledger has never seen, pass --new-consumer", err)
			}
			return nil, err
		}
	}
	evidence, _, evidenceWarning, err := resolveEvidenceWindow(ctx, store, opts.Consumer, opts.EvidenceWindow)
	if err != nil {
		return nil, err
	}
	opts.EvidenceWindow = evidence
	known, err := store.EffectVersionsMaxKnown(ctx, opts.Consumer)
	if err != nil {
		return nil, err
	}
	target := opts.EffectVersion
	if target == 0 {
		target = known + 1
	} else if target <= known {
		return nil, fmt.Errorf("%w: --effect-version %d is not greater than %d, the highest version the ledger holds for consumer %q; omit --effect-version to use %d",
			ErrVersionNotBumped, target, known, opts.Consumer, known+1)
	}

	stream, err := js.Stream(ctx, opts.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: no JetStream stream named %q on this server; list streams with `nats stream ls` and pass the DLQ stream to --stream", ErrStreamNotFound, opts.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", opts.Stream, err)
	}
	info := stream.CachedInfo()
	if info.Config.Retention == jetstream.WorkQueuePolicy {
		if opts.Backfill {
			return nil, fmt.Errorf("%w: stream %s has WorkQueue retention: it deleted each original once the consumer acknowledged it, so there is nothing to backfill from; keep originals in a stream with Limits retention (max age covering the window you may need to re-process), see docs/runbook.md",
				ErrStreamUnsupported, opts.Stream)
		}
		return nil, fmt.Errorf("%w: stream %s has WorkQueue retention: a work queue removes what it delivers and refuses the read-only ordered consumer plan scans with; keep DLQ messages in a stream with Limits retention (docs/protocol.md)",
			ErrStreamUnsupported, opts.Stream)
	}
	kind := opts.sourceKind()

	hashers, err := loadHashers(ctx, store, opts.Consumer)
	if err != nil {
		return nil, err
	}
	if start, ok, err := store.ConsumerHistoryStart(ctx, opts.Consumer); err != nil {
		return nil, err
	} else if ok {
		opts.historyStart = start
	}
	if opts.JobID == "" {
		opts.JobID = newJobID(opts.Now)
	}
	// The scan sizes each message's replay as execute will publish it, so the job ID and the
	// version it carries are fixed first.
	replay := dlq.Replay{JobID: opts.JobID, EffectVersion: target, WriteForbidden: opts.WriteForbidden, Strip: opts.StripHeaders}
	toSubjectWarning, err := checkToSubject(ctx, js, opts.ToSubject, info, opts.Consumer)
	if err != nil {
		return nil, err
	}
	session, err := store.PlanBegin(ctx)
	if err != nil {
		return nil, err
	}
	defer session.Rollback(context.WithoutCancel(ctx))

	counts, err := scanInto(ctx, js, session, &opts, info, replay, hashers)
	if err != nil {
		return nil, err
	}
	failedAfterReplay := loopGuard(&opts, counts.ReplayFailures)
	if err := session.ScanDrop(ctx, failedAfterReplay); err != nil {
		return nil, err
	}
	opts.stage("joining %d scanned messages against the ledger of consumer %s", counts.Scanned, opts.Consumer)
	if err := session.Classify(ctx, opts.Consumer, kind, target, hashers.algorithms(), opts.EvidenceWindow, opts.Max, counts.Repeats); err != nil {
		return nil, err
	}
	lookup, err := lookUpExpired(ctx, js.Conn(), store, session, &opts, known, hashers.algorithms()[0])
	if err != nil {
		return nil, err
	}
	m, stateDigest, err := buildManifest(ctx, session, &opts, info, counts, known, target, lookup)
	if err != nil {
		return nil, err
	}
	if err := keepOutFailedReplays(m, failedAfterReplay); err != nil {
		return nil, err
	}
	if m.Stats.Targets == 0 && !opts.DryRun {
		return nil, noTargets(m)
	}
	var dedup *protocol.DedupWindow
	if m.Stats.Targets > 0 {
		if dedup, err = dedupWindow(ctx, js, &opts, counts.ReplaySubject, m.Stats.Targets); err != nil {
			return nil, err
		}
	}
	if opts.DryRun {
		return &Result{Manifest: m, DryRun: true, Warnings: slices.Concat(retentionWarnings(&opts, info), warnings(m, counts),
			selectionWarnings(m, counts), failedReplayWarning(m, opts.FailedReplayLimit), hashers.warnings(opts.Consumer), nonEmpty(evidenceWarning),
			nonEmpty(toSubjectWarning), dryRunWarnings(m, opts.histograms != nil)), DedupWindow: dedup}, nil
	}
	opts.stage("recording job %s with %d targets and writing %s", m.ID, m.Stats.Targets, opts.OutputPath)
	job := jobFor(m, info.State.LastSeq, stateDigest)
	if opts.Signer != nil {
		sig, err := sshsig.Sign(opts.Signer, approval.NamespaceManifest, approval.ManifestStatement(m.ID, m.Digest))
		if err != nil {
			return nil, fmt.Errorf("sign the manifest of job %s: %w", m.ID, err)
		}
		job.PlanSignature = string(sig)
	}
	entry := ledger.AuditEntry{
		Actor:          opts.Actor,
		JobID:          m.ID,
		ManifestDigest: m.Digest,
		Action:         "plan",
		Details: map[string]any{
			"targets":               m.Stats.Targets,
			"scanned":               m.Stats.Scanned,
			"expectedExternalCalls": m.ExpectedExternalCalls,
			"effectVersion":         m.EffectVersion,
			"writeForbidden":        m.WriteForbidden,
			"source":                jobtype.SourceRef{Kind: m.SourceKind()},
			"reason":                m.Reason,
			"ticket":                m.Ticket,
		},
	}
	if opts.Signer != nil {
		entry.Details["signerKey"] = ssh.FingerprintSHA256(opts.Signer.PublicKey())
		entry.Details["signature"], entry.Details["statement"] = job.PlanSignature, string(approval.ManifestStatement(m.ID, m.Digest))
	}
	if l := m.EvidenceLookup; l != nil {
		entry.Details["evidenceLookup"] = map[string]any{"asked": l.Asked, "reconciled": l.Reconciled, "targets": l.Targets, "keptOut": l.KeptOut}
	}
	body, err := manifest.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := session.Record(ctx, job, entry); err != nil {
		return nil, err
	}
	if err := session.StoreManifest(ctx, m.ID, body); err != nil {
		return nil, err
	}
	if err := manifest.WriteBytes(opts.OutputPath, body, opts.Overwrite); err != nil {
		return nil, fmt.Errorf("write manifest of job %s: %w", m.ID, err)
	}
	if err := session.Commit(ctx); err != nil {
		os.Remove(opts.OutputPath)
		return nil, fmt.Errorf("job %s not recorded, manifest %s removed: %w", m.ID, opts.OutputPath, err)
	}
	res := &Result{Manifest: m, Warnings: slices.Concat(retentionWarnings(&opts, info), warnings(m, counts), selectionWarnings(m, counts),
		failedReplayWarning(m, opts.FailedReplayLimit),
		hashers.warnings(opts.Consumer), nonEmpty(evidenceWarning), nonEmpty(toSubjectWarning)),
		DedupWindow: dedup}
	if dedup != nil && dedup.Exceeded {
		res.Warnings = append(res.Warnings, dedup.Warning())
	}
	return res, nil
}

func (o *Options) sourceKind() string {
	if o.Backfill {
		return manifest.SourceBackfill
	}
	return manifest.SourceDLQ
}

// retentionWarnings says when a backfill's source no longer holds the start of the asked window:
// the stream's limits removed those originals, and the backfill cannot re-process them.
func retentionWarnings(o *Options, info *jetstream.StreamInfo) []string {
	if !o.Backfill || info.State.Msgs == 0 {
		return nil
	}
	first := info.State.FirstTime.UTC()
	switch {
	case o.Since != nil && first.After(*o.Since):
		return []string{fmt.Sprintf("stream %s's oldest message (sequence %d) is from %s, after --since %s: the originals before it were removed by the stream's limits and are not in this backfill; re-publish them from their system of record, or raise the stream's max age before the next fix needs them",
			o.Stream, info.State.FirstSeq, first.Format(time.RFC3339), o.Since.UTC().Format(time.RFC3339))}
	case o.Since == nil && info.State.FirstSeq > 1:
		return []string{fmt.Sprintf("stream %s starts at sequence %d (%s): %d earlier originals were removed by its limits and are not in this backfill",
			o.Stream, info.State.FirstSeq, first.Format(time.RFC3339), info.State.FirstSeq-1)}
	}
	return nil
}

func (o *Options) stage(format string, args ...any) {
	if o.Stage != nil {
		o.Stage(fmt.Sprintf(format, args...))
	}
}

func scanInto(ctx context.Context, js jetstream.JetStream, session *ledger.PlanSession, opts *Options, info *jetstream.StreamInfo,
	replay dlq.Replay, hashers planHashers) (scanCounts, error) {
	s, err := startScan(ctx, js, opts, info, replay, hashers)
	if err != nil || s == nil {
		// No message, so no repeat: Known with no IDs.
		return scanCounts{Repeats: ledger.ScanRepeats{Known: true}}, err
	}
	defer s.stop()
	pipe := newScanPipe(s)
	_, err = session.ScanCopy(ctx, pipe)
	pipe.close()
	if err != nil {
		// A cancelled plan reports where its scan stopped, whether COPY or the scan noticed first.
		scanErr := pipe.srcErr
		if scanErr == nil && ctx.Err() != nil {
			scanErr = s.err
		}
		if scanErr != nil {
			return s.counts, fmt.Errorf("plan of stream %s: %w", opts.Stream, scanErr)
		}
		return s.counts, err
	}
	if opts.Progress != nil {
		opts.Progress(s.counts.Scanned, s.counts.Scanned)
	}
	ids, known := s.repeats.candidates()
	s.counts.Repeats = ledger.ScanRepeats{Known: known, IDs: ids}
	return s.counts, nil
}

func buildManifest(ctx context.Context, session *ledger.PlanSession, opts *Options, info *jetstream.StreamInfo,
	counts scanCounts, known, target int, lookup *manifest.EvidenceLookup) (*manifest.Manifest, string, error) {
	sum, err := session.Summary(ctx)
	if err != nil {
		return nil, "", err
	}
	reasons, completedBy, err := session.Histograms(ctx)
	if err != nil {
		return nil, "", err
	}
	excluded, err := exclusions(ctx, session, opts.Consumer)
	if err != nil {
		return nil, "", err
	}
	excluded.MissingEventIDSeqs, excluded.Unusable = counts.MissingEventIDSeqs, counts.Unusable
	excluded.OverMaxPayloadSeqs = counts.OverMaxPayloadSeqs
	// The targets are recorded here, before the job that needs the manifest's digest: the
	// insert hands back the IDs and ledger rows the manifest and the state digest are made of.
	ids, stateDigest, err := session.RecordTargets(ctx, opts.JobID)
	if err != nil {
		return nil, "", err
	}
	estimate, calls, err := estimateCalls(ctx, session, opts.Consumer, sum)
	if err != nil {
		return nil, "", err
	}
	m := &manifest.Manifest{
		APIVersion: manifest.APIVersion,
		Kind:       manifest.KindManifest,
		ID:         opts.JobID,
		// The ledger keeps microseconds: the manifest says the same instant the jobs table does.
		CreatedAt: opts.Now.UTC().Truncate(time.Microsecond),
		CreatedBy: opts.Actor,
		Reason:    opts.Reason,
		Ticket:    opts.Ticket,
		Consumer:  opts.Consumer,
		Source: manifest.Source{
			Kind:          opts.sourceKind(),
			Stream:        opts.Stream,
			SubjectFilter: opts.SubjectFilter,
			Since:         utc(opts.Since),
			Until:         utc(opts.Until),
			FailureMatch:  opts.FailureMatch,
			Max:           opts.Max,
			Selection:     opts.selection(counts.Found),
			ToSubject:     opts.ToSubject,
			StripHeaders:  opts.StripHeaders,
			Headers:       opts.Headers,
			FirstSeq:      counts.FirstSeq,
			LastSeq:       counts.LastSeq,
			StreamLastSeq: info.State.LastSeq,
		},
		EffectVersion:  manifest.EffectVersion{From: known, To: target},
		WriteForbidden: opts.WriteForbidden,
		Stats: manifest.Stats{
			Scanned:                    counts.Scanned,
			MissingEventID:             counts.MissingEventID,
			InvalidEventID:             counts.InvalidEventID,
			MissingOriginalSubject:     counts.MissingOriginalSubject,
			NotMatchingFailureFilter:   counts.NotMatchingFailureFilter,
			OverMaxPayload:             counts.OverMaxPayload,
			NotSelected:                counts.NotSelected,
			WhereNotJSON:               counts.WhereNotJSON,
			WhereErrors:                counts.WhereErrors,
			Candidates:                 sum.Candidates,
			RepeatedInSource:           sum.RepeatedInSource,
			DuplicateInSource:          sum.DuplicateInSource,
			LedgerPayloadMismatch:      sum.LedgerPayloadMismatch,
			AlreadyCompleted:           sum.AlreadyCompleted,
			CompletedUnderOlderVersion: sum.CompletedUnderOlderVersion,
			AlreadyCompletedRatio:      ratio(sum.AlreadyCompleted+sum.CompletedUnderOlderVersion, sum.Candidates),
			ExcludedUncertain:          sum.ExcludedUncertain,
			ExcludedInFlight:           sum.ExcludedInFlight,
			EvidenceExpired:            sum.EvidenceExpired,
			EvidenceReconciled:         sum.EvidenceReconciled,
			ExcludedInOtherJob:         sum.ExcludedInOtherJob,
			NotProcessed:               sum.NotProcessed,
			OverMax:                    sum.OverMax,
			Targets:                    int64(len(ids)),
			FailureReasons:             reasons,
			AlreadyCompletedBy:         completedByJob(completedBy),
		},
		ExpectedExternalCalls: calls,
		ExternalCallsEstimate: estimate,
		Excluded:              excluded,
		EvidenceLookup:        lookup,
		EventIDs:              ids,
	}
	if opts.Backfill {
		m.Stats.FailureReasons, m.Stats.PreviousOutcomes = map[string]int64{}, reasons
	}
	if int64(len(ids)) != sum.Targets {
		return nil, "", fmt.Errorf("plan: listed %d targets but counted %d; the ledger session is inconsistent, run plan again", len(ids), sum.Targets)
	}
	// WriteFile verifies the sealed manifest before it writes; an invalid one rolls the plan back.
	if err := manifest.Seal(m); err != nil {
		return nil, "", err
	}
	return m, stateDigest, nil
}

func exclusions(ctx context.Context, session *ledger.PlanSession, consumer string) (manifest.Excluded, error) {
	ex := manifest.Excluded{Uncertain: []manifest.LedgerExclusion{}, InFlight: []manifest.LedgerExclusion{}, Conflicts: []manifest.Conflict{}}
	rows, err := session.LedgerExclusions(ctx, consumer)
	if err != nil {
		return ex, err
	}
	for _, r := range rows {
		le := manifest.LedgerExclusion{EventID: r.EventID, EffectVersion: r.EffectVersion, State: r.State,
			LeaseOwner: r.LeaseOwner, LeaseExpiresAt: utc(r.LeaseExpiresAt)}
		if r.Class == ledger.ClassInFlight {
			ex.InFlight = append(ex.InFlight, le)
		} else {
			ex.Uncertain = append(ex.Uncertain, le)
		}
	}
	keptOut, err := session.KeptOut(ctx, manifest.MaxListedExcluded)
	if err != nil {
		return ex, err
	}
	for _, k := range keptOut {
		switch k.Class {
		case ledger.ClassDone:
			ex.AlreadyCompleted = append(ex.AlreadyCompleted, manifest.CompletedExclusion{EventID: k.EventID, EffectVersion: k.DoneVersion, JobID: k.DoneBy})
		case ledger.ClassOtherJob:
			ex.InOtherJob = append(ex.InOtherJob, manifest.JobExclusion{EventID: k.EventID, JobID: k.OtherJob, JobStatus: k.OtherJobStatus})
		case ledger.ClassNotProcessed:
			ex.NotProcessed = append(ex.NotProcessed, k.EventID)
		}
	}
	conflicts, err := session.Conflicts(ctx)
	if err != nil {
		return ex, err
	}
	for _, c := range conflicts {
		ex.Conflicts = append(ex.Conflicts, manifest.Conflict{EventID: c.EventID, Where: c.Where, PayloadHashes: c.PayloadHashes})
	}
	expired, err := session.ExpiredEvidence(ctx, consumer)
	if err != nil {
		return ex, err
	}
	for _, x := range expired {
		le := manifest.LedgerExclusion{EventID: x.EventID, EffectVersion: x.EffectVersion, State: ledger.EffectExpired}
		if !x.Tombstone {
			le.State = "absent"
		}
		ex.EvidenceExpired = append(ex.EvidenceExpired, le)
	}
	return ex, nil
}

// estimateCalls charges each target the effect_count of its latest completed effect, and targets that
// never completed the consumer's mean, rounded up so that the budget errs on the safe side.
func estimateCalls(ctx context.Context, session *ledger.PlanSession, consumer string, sum ledger.PlanSummary) (manifest.CallsEstimate, int64, error) {
	n, mean, err := session.EffectCountMean(ctx, consumer)
	if err != nil {
		return manifest.CallsEstimate{}, 0, err
	}
	est := manifest.CallsEstimate{
		KnownTargets:     sum.KnownTargets,
		KnownCalls:       sum.KnownCalls,
		EstimatedTargets: sum.Targets - sum.KnownTargets,
		SampleSize:       n,
	}
	if n == 0 {
		est.Method = "no completed effects recorded for this consumer: 1 external call assumed per target"
		est.MeanPerEffect = 1
	} else {
		est.Method = "recorded effect_count of each target's latest completed effect; targets never completed are charged the consumer's mean effect_count, rounded up"
		est.MeanPerEffect = math.Round(mean*1000) / 1000
	}
	calls := est.KnownCalls + int64(math.Ceil(float64(est.EstimatedTargets)*est.MeanPerEffect))
	return est, calls, nil
}

// completedByJob names live completions manifest.CompletedLive; nil when nothing was done.
func completedByJob(byJob map[string]int64) map[string]int64 {
	if len(byJob) == 0 {
		return nil
	}
	out := make(map[string]int64, len(byJob))
	for job, n := range byJob {
		if job == "" {
			job = manifest.CompletedLive
		}
		out[job] = n
	}
	return out
}

func jobFor(m *manifest.Manifest, streamLastSeq uint64, stateDigest string) ledger.Job {
	return ledger.Job{
		ID:                    m.ID,
		Consumer:              m.Consumer,
		Status:                jobtype.Planned,
		ManifestDigest:        m.Digest,
		EffectVersionFrom:     m.EffectVersion.From,
		EffectVersionTo:       m.EffectVersion.To,
		WriteForbidden:        m.WriteForbidden,
		SourceKind:            m.SourceKind(),
		Reason:                m.Reason,
		Ticket:                m.Ticket,
		Stream:                m.Source.Stream,
		StreamLastSeq:         int64(streamLastSeq),
		Targets:               m.Stats.Targets,
		ExpectedExternalCalls: m.ExpectedExternalCalls,
		LedgerStateDigest:     stateDigest,
		CreatedBy:             m.CreatedBy,
		CreatedAt:             m.CreatedAt,
	}
}

func warnings(m *manifest.Manifest, counts scanCounts) []string {
	var w []string
	s := m.Stats
	switch {
	case m.SourceKind() == manifest.SourceBackfill:
		if s.Targets > 0 {
			w = append(w, fmt.Sprintf("a backfill re-processes %d events that already completed: every one repeats its external effects (%d calls expected) unless the job is --write-forbidden",
				s.Targets, m.ExpectedExternalCalls))
		}
		if s.NotProcessed > 0 {
			w = append(w, fmt.Sprintf("%d events have no completed row (never processed, or still on their way) and were kept out; see excluded.notProcessed", s.NotProcessed))
		}
	case s.AlreadyCompleted > 0:
		w = append(w, fmt.Sprintf("%d of the %d candidates already completed (%s) and were kept out: a DLQ replay never repeats what is done; `replayctl drain JOB` removes a finished job's messages from the DLQ",
			s.AlreadyCompleted, s.Candidates, completedBySentence(s.AlreadyCompletedBy)))
	}
	if n := counts.BeforeHistory; n > 0 {
		w = append(w, fmt.Sprintf("%d DLQ messages (the oldest stored %s) are older than consumer %s's ledger history: "+
			"events handled before replayctl recorded the consumer have no ledger row and plan as targets; "+
			"import the old system's processed events with `replayctl ledger import --consumer %s FILE` and plan again",
			n, counts.OldestBeforeHistory.UTC().Format(time.RFC3339), m.Consumer, m.Consumer))
	}
	if n := s.ExcludedInOtherJob; n > 0 {
		w = append(w, fmt.Sprintf("%d events are targets of jobs that have not finished (%s) and were kept out; finish or cancel those jobs first (see excluded.inOtherJob)", n, otherJobsText(m)))
	}
	if n := s.DuplicateInSource + s.LedgerPayloadMismatch; n > 0 {
		w = append(w, fmt.Sprintf("%d event IDs carry conflicting payloads and were excluded; review excluded.conflicts", n))
	}
	if n := s.ExcludedUncertain; n > 0 {
		w = append(w, fmt.Sprintf("%d event IDs are uncertain (outcome unknown) and were excluded; reconcile them by hand", n))
	}
	if n := s.EvidenceExpired; n > 0 {
		w = append(w, fmt.Sprintf("%d event IDs have expired ledger evidence (a tombstone, or no row and a message older than the evidence window) and were excluded; "+
			"see excluded.evidenceExpired and evidenceLookup: the consumer's look-up did not say whether they happened; settle them by hand", n))
	}
	if l := m.EvidenceLookup; l != nil && l.Stopped != "" {
		w = append(w, "the consumer's look-up was not asked about every event whose evidence expired: "+l.Stopped)
	}
	if n := s.EvidenceReconciled; n > 0 {
		w = append(w, fmt.Sprintf("%d event IDs with expired ledger evidence were recorded reconciled: the consumer's look-up said their effect happened", n))
	}
	if n := s.ExcludedInFlight; n > 0 {
		w = append(w, fmt.Sprintf("%d event IDs are being processed right now and were excluded", n))
	}
	if n := s.MissingEventID + s.InvalidEventID; n > 0 {
		w = append(w, fmt.Sprintf("%d messages have no usable Event-Id and cannot be replayed safely; see excluded.missingEventIdSeqs", n))
	}
	if n := s.MissingOriginalSubject; n > 0 {
		w = append(w, fmt.Sprintf("%d messages have no original-subject header, so execute could not route them; see excluded.missingEventIdSeqs", n))
	}
	if n := s.OverMaxPayload; n > 0 {
		w = append(w, fmt.Sprintf("%d messages were kept out because their replay (payload + the replay headers execute adds, up to %d bytes) "+
			"exceeds the NATS server's max_payload of %d bytes: raise max_payload in the server's configuration to at least %d "+
			"(nats-server accepts up to 64 MB; the streams' max_msg_size must allow it too), then plan again; see excluded.overMaxPayloadSeqs",
			n, counts.LargestOverMaxPayload, counts.MaxPayload, counts.LargestOverMaxPayload))
	}
	if s.OverMax > 0 {
		w = append(w, fmt.Sprintf("--max left %d eligible events for a later job", s.OverMax))
	}
	return w
}

// completedBySentence renders AlreadyCompletedBy as "12 live, 32 by job-a", largest first.
func completedBySentence(byJob map[string]int64) string {
	jobs := slices.Collect(maps.Keys(byJob))
	slices.SortFunc(jobs, func(a, b string) int {
		if c := cmp.Compare(byJob[b], byJob[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		if j == manifest.CompletedLive {
			parts[i] = fmt.Sprintf("%d live", byJob[j])
		} else {
			parts[i] = fmt.Sprintf("%d by %s", byJob[j], j)
		}
	}
	return strings.Join(parts, ", ")
}

func ratio(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return math.Round(float64(part)/float64(whole)*1e6) / 1e6
}

func timeOrNone(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func newJobID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "job-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// nonEmpty is the one warning w, or none.
func nonEmpty(w string) []string {
	if w == "" {
		return nil
	}
	return []string{w}
}
