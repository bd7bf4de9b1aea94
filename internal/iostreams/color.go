package iostreams

import "os"

// ColorEnabled reports whether Out may carry ANSI colour: a person at a terminal, output not for
// machines, and NO_COLOR (https://no-color.org: any non-empty value) unset. A pipe, a file or a
// CI log gets plain words, so grep and diff see what a person reads.
func (s *IOStreams) ColorEnabled() bool {
	return s.stdoutTTY && !s.machineOutput && os.Getenv("NO_COLOR") == ""
}

// Palette colours the few words an operator scans for; it is plain where colour is off.
type Palette struct{ on bool }

// Palette returns the palette for Out.
func (s *IOStreams) Palette() Palette { return Palette{on: s.ColorEnabled()} }

const (
	ansiReset  = "\x1b[0m"
	ansiGreen  = "\x1b[1;32m"
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[1;33m"
)

// Pass colours a passing word green.
func (p Palette) Pass(s string) string { return p.paint(ansiGreen, s) }

// Fail colours a failing word red.
func (p Palette) Fail(s string) string { return p.paint(ansiRed, s) }

// Warn colours a warning word yellow.
func (p Palette) Warn(s string) string { return p.paint(ansiYellow, s) }

func (p Palette) paint(code, s string) string {
	if !p.on {
		return s
	}
	return code + s + ansiReset
}
