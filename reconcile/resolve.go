package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

var (
	// ErrNothingToResolve means the event has no uncertain row to resolve (under the version
	// given, or at all), or several and no version was given. Nothing was changed.
	ErrNothingToResolve = fault.New(fault.Invalid, "nothing to resolve")

	// ErrChangedSinceRead means the row changed between reading and resolving it (reconciled or
	// marked by a look-up, resolved by someone else). Nothing was changed.
	ErrChangedSinceRead = errors.New("row changed since it was read")
)

const (
	minNoteRunes = 12
	maxNoteRunes = 500
)

// ResolveOptions is a person's decision on one uncertain ledger row, after checking the provider.
type ResolveOptions struct {
	Consumer string
	EventID  string
	// EffectVersion picks the row; 0 means the event's only uncertain row.
	EffectVersion int
	// As is ledger.VerdictHappened (the row is reconciled, never replayed) or
	// ledger.VerdictNotHappened (the row is released: the next plan targets the event).
	As string
	// Note says what was checked; it is stored on the row and in the audit entry.
	Note string
	// Actor is recorded on the row and in the audit log; empty means "unknown".
	Actor string
	// Confirm is asked, with the row and what would become of it, whether to resolve it; false
	// changes nothing and returns ErrNotConfirmed. nil resolves it (--yes).
	Confirm func(*Resolution) (bool, error)
}

// Resolution is the row a resolve read and what became of it; cmd prints it.
type Resolution struct {
	RunID         string `json:"runId"`
	Consumer      string `json:"consumer"`
	EventID       string `json:"eventId"`
	EffectVersion int    `json:"effectVersion"`
	JobID         string `json:"jobId,omitempty"`
	// As is the decision: happened or not_happened.
	As   string `json:"as"`
	Note string `json:"note"`
	// From and To are the row's states; To is reconciled or received.
	From string `json:"from"`
	To   string `json:"to"`
	// UncertainForSeconds is how long the row had been uncertain when read.
	UncertainForSeconds float64         `json:"uncertainForSeconds"`
	Calls               int             `json:"calls"`
	ExternalRefs        json.RawMessage `json:"externalRefs"`
	LastError           string          `json:"lastError,omitempty"`
	// PreviousVerdict and PreviousNote are the last look-up's, if any.
	PreviousVerdict string `json:"previousVerdict,omitempty"`
	PreviousNote    string `json:"previousNote,omitempty"`
	// Applied says the row was resolved; TargetUpdated that its replay job's target was too.
	Applied       bool `json:"applied"`
	TargetUpdated bool `json:"targetUpdated"`
}

// Normalise checks every option, reporting all problems at once as an *OptionsError, and fills
// the defaults. Resolve calls it first; callers may call it earlier to refuse bad input before
// connecting.
func (o *ResolveOptions) Normalise() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if err := protocol.ValidateConsumerName(o.Consumer); err != nil {
		add("--consumer %q: %v", o.Consumer, err)
	}
	if err := protocol.ValidateEventID(o.EventID); err != nil {
		add("EVENT %q: %v", o.EventID, err)
	}
	if o.EffectVersion < 0 {
		add("--effect-version %d: must be positive (0: the event's only uncertain row)", o.EffectVersion)
	}
	switch o.As {
	case ledger.VerdictHappened, ledger.VerdictNotHappened:
	case "":
		add("--as is required: happened (the effect exists: never replayed) or not-happened (the next plan targets the event)")
	default:
		add("--as %q: want happened or not-happened; a row nobody can settle stays uncertain", o.As)
	}
	o.Note = strings.TrimSpace(o.Note)
	if err := manifest.ValidateText(o.Note, maxNoteRunes); err != nil {
		add("--note %v", err)
	} else if utf8.RuneCountInString(o.Note) < minNoteRunes {
		add("--note %q: say what you checked and where, e.g. 'payments dashboard: no charge for ord-123 (INC-77)'", o.Note)
	}
	if o.Actor == "" {
		o.Actor = "unknown"
	}
	if len(problems) > 0 {
		return &OptionsError{Problems: problems}
	}
	return nil
}

// Resolve settles one uncertain row as a person decided, through the compare-and-set reconcile
// applies look-up verdicts with, and one audit entry (ledger.AuditResolved). Happened reconciles
// the row; not_happened releases it to received with no call started and fails its job target,
// so the next plan targets the event: nothing is replayed until a job is planned, shadowed and
// executed. A row that changed since it was read is left alone (ErrChangedSinceRead).
func Resolve(ctx context.Context, store ResolveLedger, o ResolveOptions) (*Resolution, error) {
	if err := o.Normalise(); err != nil {
		return nil, err
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := store.EffectsOfEventForReview(ctx, o.Consumer, o.EventID)
	if err != nil {
		return nil, err
	}
	row, err := pickUncertain(o, rows)
	if err != nil {
		return nil, err
	}
	res := &Resolution{RunID: newRunID("resolve"), Consumer: o.Consumer, EventID: row.EventID, EffectVersion: row.EffectVersion,
		JobID: row.JobID, As: o.As, Note: o.Note, From: row.State, To: ledger.EffectReconciled,
		UncertainForSeconds: row.Age.Seconds(), Calls: max(row.EffectCount, row.CallsStarted),
		ExternalRefs: row.ExternalRefs, LastError: row.LastError, PreviousVerdict: row.ReviewVerdict, PreviousNote: row.ReviewNote}
	if o.As == ledger.VerdictNotHappened {
		res.To = ledger.EffectReceived
	}
	if o.Confirm != nil {
		ok, err := o.Confirm(res)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("%w: event %q of consumer %s was not resolved, nothing was changed; "+
				"on a terminal type the event ID, in CI pass --yes", ErrNotConfirmed, o.EventID, o.Consumer)
		}
	}
	applied, err := store.EffectsReconcileApply(ctx, ledger.ReconcileBatch{Consumer: o.Consumer, Actor: o.Actor, RunID: res.RunID,
		Verdicts: []ledger.ReconcileVerdict{{EventID: row.EventID, EffectVersion: row.EffectVersion, Verdict: o.As,
			FoundRefs: json.RawMessage("[]"), Note: o.Note, SeenUpdatedAt: row.UpdatedAt, SeenReviewedAt: row.ReviewedAt,
			Resolved: true}}})
	if err != nil {
		return res, err
	}
	if len(applied) == 0 {
		return res, fmt.Errorf("%w: event %q version %d of consumer %s changed while it was being resolved (a look-up or "+
			"another person settled or marked it); nothing was changed: run resolve again to see it as it is now",
			ErrChangedSinceRead, o.EventID, row.EffectVersion, o.Consumer)
	}
	res.Applied, res.TargetUpdated = true, applied[0].TargetUpdated
	return res, nil
}

// pickUncertain is the row o names: the one under o.EffectVersion, or the event's only uncertain
// row. Anything else is refused with the event's rows, so the operator sees why.
func pickUncertain(o ResolveOptions, rows []ledger.UncertainRow) (ledger.UncertainRow, error) {
	var uncertain []ledger.UncertainRow
	states := make([]string, 0, len(rows))
	for _, r := range rows {
		states = append(states, fmt.Sprintf("version %d %s", r.EffectVersion, r.State))
		if r.State == "uncertain" && (o.EffectVersion == 0 || r.EffectVersion == o.EffectVersion) {
			uncertain = append(uncertain, r)
		}
	}
	held := "it has no ledger rows"
	if len(states) > 0 {
		held = "its rows: " + strings.Join(states, ", ")
	}
	switch {
	case len(uncertain) == 1:
		return uncertain[0], nil
	case len(uncertain) > 1:
		return ledger.UncertainRow{}, fmt.Errorf("%w: event %q of consumer %s is uncertain under several versions (%s): "+
			"pass --effect-version", ErrNothingToResolve, o.EventID, o.Consumer, held)
	case o.EffectVersion > 0:
		return ledger.UncertainRow{}, fmt.Errorf("%w: event %q of consumer %s has no uncertain row under version %d (%s)",
			ErrNothingToResolve, o.EventID, o.Consumer, o.EffectVersion, held)
	}
	return ledger.UncertainRow{}, fmt.Errorf("%w: event %q of consumer %s has no uncertain row (%s); only an uncertain row "+
		"is resolved (a stuck lease becomes one through `replayctl reconcile`)", ErrNothingToResolve, o.EventID, o.Consumer, held)
}
