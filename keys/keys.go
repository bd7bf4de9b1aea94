// Package keys is the operator's side of the API idempotency records (package apikey): the
// registered retention policies, each route's figures judged against the design's thresholds, a
// key's records, prune and a person's resolve. It reads and writes through the ledger and prints
// nothing; `replayctl keys` wires it.
package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/internal/suggest"
	"github.com/replayctl/replayctl/ledger"
)

// PolicyLister is what every verb reads to name routes: the registered retention policies.
type PolicyLister interface {
	// CheckSchema refuses a ledger not migrated to this binary's version (ledger.ErrSchemaOutdated).
	CheckSchema(ctx context.Context) error
	RetentionPoliciesList(ctx context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error)
}

// Records is what show, uncertain, resolve and policy need: one key's records, the records
// awaiting a decision, a person's resolution, and the registered policies (ledgerfake.APIRecords
// fakes it, held to *ledger.Store's behaviour by ledgerconformance).
type Records interface {
	PolicyLister
	APIKeysOfKey(ctx context.Context, keyHash, route string) ([]apikey.Record, error)
	APIKeysUncertain(ctx context.Context, route string, limit int) ([]apikey.Record, error)
	APIKeysResolve(ctx context.Context, s apikey.Settlement, audit ledger.AuditEntry) (bool, error)
}

// Store is what every verb needs of the ledger: the records, and stats' daily counts and
// attention figures and prune, whose rules live in the ledger's statements. *ledger.Store
// implements it.
type Store interface {
	Records
	APIKeyDailySince(ctx context.Context, since time.Time, route string) ([]apikey.DailyCount, error)
	APIKeysAttention(ctx context.Context, route string) ([]ledger.APIKeyAttention, error)
	APIKeysPrune(ctx context.Context, o ledger.APIKeysPruneOptions) (*ledger.APIKeysPruneReport, error)
}

var _ Store = (*ledger.Store)(nil)

var (
	// ErrBadRequest means the operator's input cannot name what they meant (no key, a bad
	// resolution, a key under several scopes without --scope-hash).
	ErrBadRequest = fault.New(fault.Invalid, "bad request")
	// ErrNotFound means no record matched.
	ErrNotFound = fault.New(fault.Invalid, "no such API record")
	// ErrNotUncertain means the record is not awaiting a decision (settled meanwhile, or never
	// uncertain): nothing was changed.
	ErrNotUncertain = errors.New("the API record is not uncertain")
	// ErrNotConfirmed means the operator did not confirm.
	ErrNotConfirmed = fault.New(fault.Refused, "not confirmed")
)

// PolicyView is one registered policy in the verbs' output: windows and delays in whole seconds.
type PolicyView struct {
	Kind                  apikey.PolicyKind `json:"kind"`
	Name                  string            `json:"name"`
	ReplayWindowSeconds   int64             `json:"replayWindowSeconds"`
	EvidenceWindowSeconds int64             `json:"evidenceWindowSeconds"`
	ClientRetrySeconds    int64             `json:"clientRetrySeconds"`
	OfflineResendSeconds  int64             `json:"offlineResendSeconds"`
	InquirySeconds        int64             `json:"inquirySeconds"`
	Irreversible          bool              `json:"irreversible"`
	ExpiredIsNew          bool              `json:"expiredIsNew"`
	RegisteredBy          string            `json:"registeredBy"`
	RegisteredAt          time.Time         `json:"registeredAt"`
}

func secondsOf(d time.Duration) int64 { return int64(d / time.Second) }

// Policies returns the registered policies of kind (empty: both) and name (empty: all).
func Policies(ctx context.Context, store PolicyLister, kind apikey.PolicyKind, name string) ([]PolicyView, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	ps, err := store.RetentionPoliciesList(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	if name != "" && len(ps) == 0 {
		return nil, unknownName(ctx, store, kind, name)
	}
	out := make([]PolicyView, 0, len(ps))
	for _, p := range ps {
		out = append(out, PolicyView{Kind: p.Kind, Name: p.Name, ReplayWindowSeconds: secondsOf(p.ReplayWindow),
			EvidenceWindowSeconds: secondsOf(p.EvidenceWindow), ClientRetrySeconds: secondsOf(p.Delays.ClientRetry),
			OfflineResendSeconds: secondsOf(p.Delays.OfflineResend), InquirySeconds: secondsOf(p.Delays.Inquiry),
			Irreversible: p.Irreversible, ExpiredIsNew: p.ExpiredIsNew, RegisteredBy: p.RegisteredBy, RegisteredAt: p.RegisteredAt.UTC()})
	}
	return out, nil
}

// ErrUnknownRoute means no route or consumer of the name registered a retention policy: a typo,
// or a service that never started its middleware or SDK against this ledger.
var ErrUnknownRoute = fault.New(fault.Invalid, "unknown route")

// unknownName says which names did register, and the nearest to name.
func unknownName(ctx context.Context, store PolicyLister, kind apikey.PolicyKind, name string) error {
	all, err := store.RetentionPoliciesList(ctx, kind, "")
	if err != nil {
		return err
	}
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	what := "route or consumer"
	if kind == apikey.PolicyRoute {
		what = "route"
	}
	known := "none registered a policy yet (a service registers its routes when its middleware starts)"
	if len(names) > 0 {
		known = "registered: " + strings.Join(names[:min(20, len(names))], ", ")
	}
	guess := ""
	if g := suggest.Phrase(suggest.Closest(name, names)); g != "" {
		guess = g + " "
	}
	return fmt.Errorf("%w: no %s %q in the ledger; %s(%s)", ErrUnknownRoute, what, name, guess, known)
}

// checkRoute refuses a route no service registered, with the ones that did.
func checkRoute(ctx context.Context, store PolicyLister, route string) error {
	if route == "" {
		return nil
	}
	ps, err := store.RetentionPoliciesList(ctx, apikey.PolicyRoute, route)
	if err != nil || len(ps) > 0 {
		return err
	}
	return unknownName(ctx, store, apikey.PolicyRoute, route)
}
