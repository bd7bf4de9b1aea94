// Package iostreams is the one place replayctl decides what goes where: data to Out, progress,
// hints and prompts to ErrOut, and decoration (tables with boxes, progress bars) only where a
// person is watching a terminal. Commands take an *IOStreams instead of touching os.Std*, so
// tests can run them against buffers and choose whether they "are" on a TTY.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

// IOStreams holds the standard streams of one replayctl invocation and whether each is a terminal.
type IOStreams struct {
	// In is where prompts read answers.
	In io.Reader
	// Out carries a command's data: its result, a table, the --json document.
	Out io.Writer
	// ErrOut carries everything else: progress, hints, warnings, errors.
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	// machineOutput is set under --json: stderr stays free of redrawn bars, so a CI log of a
	// --json run holds only lines a parser or a person can read.
	machineOutput bool
	// progressInterval is how often a long step prints a progress line where no bar is drawn
	// (--progress-interval); 0 prints none.
	progressInterval time.Duration
}

// System returns the process's streams, each marked a TTY when it is a terminal.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
	}
}

// Test returns streams backed by buffers, none of them a TTY until a test says so with the
// Set*TTY methods.
func Test() (ios *IOStreams, stdin, stdout, stderr *bytes.Buffer) {
	stdin, stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: stdin, Out: stdout, ErrOut: stderr}, stdin, stdout, stderr
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// IsStdinTTY reports whether In is a terminal, that is whether a person could answer a prompt.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether Out is a terminal: tables are drawn for people rather than scripts.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether ErrOut is a terminal: progress bars may be drawn there.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdinTTY overrides whether In counts as a terminal.
func (s *IOStreams) SetStdinTTY(isTTY bool) { s.stdinTTY = isTTY }

// SetStdoutTTY overrides whether Out counts as a terminal.
func (s *IOStreams) SetStdoutTTY(isTTY bool) { s.stdoutTTY = isTTY }

// SetStderrTTY overrides whether ErrOut counts as a terminal.
func (s *IOStreams) SetStderrTTY(isTTY bool) { s.stderrTTY = isTTY }

// SetMachineOutput records that stdout carries machine output (--json), which turns progress
// bars off even on a terminal.
func (s *IOStreams) SetMachineOutput(on bool) { s.machineOutput = on }

// ShowsProgress reports whether progress belongs on ErrOut: a terminal, and output not for machines.
func (s *IOStreams) ShowsProgress() bool { return s.stderrTTY && !s.machineOutput }

// SetProgressInterval sets how often a long step prints one progress line where no bar is drawn
// (no terminal, or --json); 0 prints none.
func (s *IOStreams) SetProgressInterval(d time.Duration) { s.progressInterval = max(d, 0) }

// ProgressInterval is the interval SetProgressInterval set.
func (s *IOStreams) ProgressInterval() time.Duration { return s.progressInterval }

// DefaultWidth is the width assumed when the terminal does not say (and in tests): the narrowest
// terminal in common use.
const DefaultWidth = 80

// Width is how many columns output on w may use: the terminal's width when w is one, else
// $COLUMNS, else DefaultWidth.
func Width(w io.Writer) int {
	if f, ok := w.(interface{ TerminalWidth() int }); ok {
		return f.TerminalWidth()
	}
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return DefaultWidth
}
