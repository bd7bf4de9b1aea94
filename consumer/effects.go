package consumer

import (
	"context"
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// maxEffectName bounds kind and target: they are identifiers stored in external_refs and shown in
// shadow reports, not data.
const maxEffectName = 128

// EffectFunc performs one external write and returns the provider's reference for it.
type EffectFunc func(ctx context.Context) (ref string, err error)

// Effects records and, in live and replay modes without write-forbidden, performs external calls.
// A handler makes every external write through Call, which is what lets the ledger tell a crash
// before a call from a crash during one. It is safe for concurrent use.
type Effects struct {
	// suppress is set in shadow mode and for write-forbidden replays: calls are recorded, not made.
	suppress bool
	// starting records in the ledger that call number n (from 1) is about to be made; it must
	// succeed first.
	starting func(ctx context.Context, n int) error
	// traced: the delivery's span is recorded, so each call gets a span of its own.
	traced bool

	mu       sync.Mutex
	recorded []protocol.Effect
	started  int
	made     int
	// unknown is the first started call that failed without proof it did not run; the row
	// becomes uncertain.
	unknown error
}

// Call performs fn as the external write kind (say "charge") to target (say an account ID) and
// returns its reference. When writes are suppressed fn is not called, the call is recorded as
// Suppressed and Call returns ("", nil). Fail closed: once the call is recorded as started, any
// error from fn is returned, but the event's row will become uncertain whatever the handler does
// next, and later calls are refused, unless fn marked its error with NotExecuted (then the write
// certainly did not happen and the handler may fail, be retried, or carry on). Timeouts,
// cancellations and ErrOutcomeUnknown stay uncertain even when marked.
func (fx *Effects) Call(ctx context.Context, kind, target string, fn EffectFunc) (string, error) {
	if err := validEffectName("kind", kind); err != nil {
		return "", err
	}
	if err := validEffectName("target", target); err != nil {
		return "", err
	}
	if fn == nil {
		return "", fmt.Errorf("effect %s %s: the EffectFunc is nil", kind, target)
	}
	fx.mu.Lock()
	if fx.suppress {
		fx.recorded = append(fx.recorded, protocol.Effect{Kind: kind, Target: target, Suppressed: true})
		fx.mu.Unlock()
		return "", nil
	}
	if fx.unknown != nil {
		fx.mu.Unlock()
		return "", fmt.Errorf("effect %s %s not made: an earlier call's outcome is unknown (%v), so the event goes to manual review", kind, target, fx.unknown)
	}
	fx.started++
	n := fx.started
	fx.mu.Unlock()

	ctx, span := fx.startCall(ctx, kind, n)
	defer span.End()
	if err := fx.starting(ctx, n); err != nil {
		err = fmt.Errorf("effect %s %s not made: %w", kind, target, err)
		endCall(span, "not made", err)
		return "", err
	}
	ref, err := fn(ctx)

	fx.mu.Lock()
	defer fx.mu.Unlock()
	if err != nil {
		if !certainlyNotExecuted(err) {
			if fx.unknown == nil {
				fx.unknown = fmt.Errorf("call %d (%s %s): %w", n, kind, target, err)
			}
			endCall(span, "uncertain", err)
		} else {
			endCall(span, "not executed", err)
		}
		return "", err
	}
	fx.recorded = append(fx.recorded, protocol.Effect{Kind: kind, Target: target, Ref: ref})
	fx.made++
	return ref, nil
}

// Recorded returns the calls made or suppressed so far, in call order (Suppressed set when not
// made). Calls that failed are not in it; one whose outcome is unknown is named in the row's
// last_error instead.
func (fx *Effects) Recorded() []protocol.Effect {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]protocol.Effect{}, fx.recorded...)
}

// tally returns how many calls were made and the first unknown outcome, once the handler returned.
func (fx *Effects) tally() (made int, unknown error) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.made, fx.unknown
}

func validEffectName(field, s string) error {
	if s == "" || len(s) > maxEffectName {
		return fmt.Errorf("effect %s %q: use a short identifier of 1-%d bytes", field, clip.Stored(s, 32), maxEffectName)
	}
	return nil
}
