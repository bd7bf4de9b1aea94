package shadow

import (
	"bytes"
	"encoding/json"

	"github.com/replayctl/replayctl/ledger"
)

// A terminal business failure ("order has no currency", "card declined") is a result the
// consumer stores, so the protocol answers it with status ok and the body the ledger keeps:
// {"error": "<message>"} (docs/protocol.md). Compared with an original that failed alike it would
// read as identical; execute's error guard counts it as a failure, so shadow does too.

// businessFailure returns the message of a result that is a terminal business failure: an object
// whose one member is "error", a string.
func businessFailure(result json.RawMessage) (string, bool) {
	if len(result) == 0 || !bytes.Contains(result, []byte(`"error"`)) {
		return "", false
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(result, &body); err != nil || len(body) != 1 {
		return "", false
	}
	raw, ok := body["error"]
	var message string
	if !ok || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &message) != nil {
		return "", false
	}
	return message, true
}

// failed reports whether an ok answer is a terminal business failure.
func (a *answer) failed() bool {
	if a == nil || a.status != statusOK {
		return false
	}
	_, ok := businessFailure(a.result)
	return ok
}

// originalFailed reports whether the ledger's original was a terminal business failure, by its
// outcome kind (which outlives a pruned body) or its body.
func originalFailed(o *ledger.Original) bool {
	if o == nil {
		return false
	}
	if o.OutcomeKind == "business" {
		return true
	}
	_, ok := businessFailure(o.ResultBody)
	return ok
}
