package reconcile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/reconcile"
)

func resolveOptions(event string, as string) reconcile.ResolveOptions {
	return reconcile.ResolveOptions{Consumer: exectest.Consumer, EventID: event, As: as, Actor: "alice",
		Note: "provider dashboard checked for the order"}
}

// A row changed while the person was looking at it (a look-up marked it) is left alone: the
// decision was made on what the row said before.
func TestResolveLeavesARowThatChangedWhileItWasShown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3, []int{1}, nil, false)
	o := resolveOptions(exectest.EventID(1), ledger.VerdictNotHappened)
	o.Confirm = func(r *reconcile.Resolution) (bool, error) {
		ledgertest.MarkForManualReview(t, w.DB, ledger.VerdictHappened, r.EventID)
		return true, nil
	}
	res, err := reconcile.Resolve(w.Ctx, w.Store, o)
	if !errors.Is(err, reconcile.ErrChangedSinceRead) || res == nil || res.Applied {
		t.Fatalf("err %v, resolution %+v; want ErrChangedSinceRead, not applied", err, res)
	}
	if got := w.states(); got != "evt-00000:completed evt-00001:uncertain:manual_review evt-00002:completed" {
		t.Fatalf("rows after a refused resolve: %s", got)
	}
	if n := w.QueryInt(`select count(*) from audit where action = $1`, ledger.AuditResolved); n != 0 {
		t.Fatalf("%d resolve audit entries for a row left alone", n)
	}
}

// An event uncertain under two versions needs --effect-version; with it only that row changes.
func TestResolvePicksTheRowByVersionWhenThereAreSeveral(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2, []int{1}, nil, false)
	ledgertest.InsertEffects(t, w.DB, ledgertest.Effect{EventID: exectest.EventID(1), Version: 7, State: "uncertain"})
	_, err := reconcile.Resolve(w.Ctx, w.Store, resolveOptions(exectest.EventID(1), ledger.VerdictHappened))
	if !errors.Is(err, reconcile.ErrNothingToResolve) || !strings.Contains(err.Error(), "pass --effect-version") ||
		!strings.Contains(err.Error(), "version 1 uncertain, version 7 uncertain") {
		t.Fatalf("err %v, want ErrNothingToResolve naming both versions", err)
	}
	o := resolveOptions(exectest.EventID(1), ledger.VerdictHappened)
	o.EffectVersion = 7
	res, err := reconcile.Resolve(w.Ctx, w.Store, o)
	if err != nil || !res.Applied || res.EffectVersion != 7 || res.To != ledger.EffectReconciled {
		t.Fatalf("resolve version 7: %+v, %v", res, err)
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and state = 'uncertain' and effect_version = 1`, exectest.EventID(1)); n != 1 {
		t.Error("the version-1 row changed too")
	}
}
