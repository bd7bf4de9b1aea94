package manifest

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/replayctl/replayctl/internal/clip"
)

const (
	minReasonChars = 12
	minReasonWords = 3
	reasonHint     = "must say why the replay is needed and what changed, e.g. " +
		"'provider outage INC-4521 fixed; re-run failed charges'"
)

// placeholderReasons are reasons people type to get past a required flag, compared after
// lower-casing and collapsing white space.
var placeholderReasons = map[string]bool{
	"replay": true, "replay dlq": true, "replay the dlq": true, "replay messages": true,
	"replay all": true, "redrive": true, "retry": true, "rerun": true, "re-run": true,
	"fix": true, "fixed": true, "test": true, "testing": true, "todo": true, "tbd": true,
	"wip": true, "asdf": true, "n/a": true, "na": true, "none": true, "-": true, "xxx": true,
	"no reason": true, "because": true,
}

// genericWords say nothing about why a replay is needed; a reason made only of them is refused.
var genericWords = map[string]bool{
	"replay": true, "replaying": true, "redrive": true, "rerun": true, "re": true, "run": true,
	"retry": true, "again": true, "dlq": true, "dead": true, "letter": true, "queue": true,
	"the": true, "a": true, "all": true, "of": true, "from": true, "messages": true, "message": true,
	"events": true, "event": true, "failed": true, "failures": true, "fix": true, "test": true,
	"testing": true, "todo": true, "please": true, "them": true, "these": true, "it": true,
}

// ValidateReason reports whether reason is fit for the audit log: at least 12 characters and 3
// distinct words after trimming, and not a placeholder such as "replay", "fix" or "n/a".
func ValidateReason(reason string) error {
	trimmed := strings.TrimSpace(reason)
	normal := strings.ToLower(strings.Join(strings.Fields(trimmed), " "))
	if placeholderReasons[normal] {
		return fmt.Errorf("%s; %q is a placeholder", reasonHint, clip.Bytes(trimmed, maxQuoted))
	}
	words := strings.FieldsFunc(normal, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	distinct := make(map[string]bool, len(words))
	informative := false
	for _, w := range words {
		distinct[w] = true
		informative = informative || !genericWords[w]
	}
	switch {
	case len([]rune(trimmed)) < minReasonChars || len(distinct) < minReasonWords:
		return fmt.Errorf("%s; %q is too short (%d characters, %d distinct words; need %d and %d)",
			reasonHint, clip.Bytes(trimmed, maxQuoted), len([]rune(trimmed)), len(distinct), minReasonChars, minReasonWords)
	case !informative:
		return fmt.Errorf("%s; %q only says what, not why", reasonHint, clip.Bytes(trimmed, maxQuoted))
	}
	return nil
}
