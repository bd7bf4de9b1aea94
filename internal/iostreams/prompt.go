package iostreams

import (
	"bufio"
	"fmt"
	"strings"
)

// CanPrompt reports whether a person can be asked: In and ErrOut are both terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// ConfirmTyped asks on ErrOut ("Type <what> to confirm: ") for want to be typed and reads one
// line from In: true only when the line is want, white space around it aside. Typing a name
// rather than answering y makes the operator read what the action applies to. It does not check
// CanPrompt: a caller without a terminal declines before showing what it would do.
func (s *IOStreams) ConfirmTyped(what, want string) bool {
	fmt.Fprintf(s.ErrOut, "Type %s to confirm: ", what)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	return strings.TrimSpace(line) == want
}
