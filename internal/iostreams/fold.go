package iostreams

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Fold breaks line at spaces so no piece is wider than width, continuing with a two-space indent:
// a sentence on a terminal wraps where a person would, not where the terminal cuts it. A word
// longer than width stays whole; width <= 0 leaves line as it is, and so is a table's line (box
// drawing) or one with a terminal escape, which folding would break.
func Fold(line string, width int) string {
	if width <= 0 || utf8.RuneCountInString(line) <= width || strings.ContainsAny(line, "\x1b│─") {
		return line
	}
	var b strings.Builder
	col := 0
	for i, word := range strings.Split(line, " ") {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case col+1+n > width && col > 2:
			b.WriteString("\n  ")
			col = 2
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

// FoldWriter folds each line written through it to its width (Fold); a table drawn on it takes
// that width too (Width). A line without its newline waits for it, or for Flush.
type FoldWriter struct {
	out   io.Writer
	width int
	buf   []byte
}

// NewFoldWriter folds what is written to out at width columns.
func NewFoldWriter(out io.Writer, width int) *FoldWriter { return &FoldWriter{out: out, width: width} }

// TerminalWidth is the width the writer folds at.
func (f *FoldWriter) TerminalWidth() int { return f.width }

// Unwrap is the writer underneath.
func (f *FoldWriter) Unwrap() io.Writer { return f.out }

// Write folds every complete line of p.
func (f *FoldWriter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(f.buf[:i])
		f.buf = f.buf[i+1:]
		if _, err := io.WriteString(f.out, Fold(line, f.width)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// Flush writes a last line that had no newline.
func (f *FoldWriter) Flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(f.out, Fold(string(f.buf), f.width))
	f.buf = nil
	return err
}
