package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/olekukonko/ll"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/iostreams"
)

// OutputAPIVersion is the version of the shapes of every --json document (docs/contract.md).
const OutputAPIVersion = "replayctl/v1"

// PrintJSON writes v as the one --json document of a command: an object that starts with
// apiVersion and kind (a list becomes the document's items), indented for people reading CI logs,
// without HTML escaping so "<" and "&" in reasons stay readable.
func PrintJSON(w io.Writer, kind string, v any) error {
	doc, err := MarshalDocument(kind, v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return fmt.Errorf("writing JSON output: %w", err)
	}
	out.WriteByte('\n')
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("writing JSON output: %w", err)
	}
	return nil
}

// MarshalDocument encodes v, compact, as a document of kind.
func MarshalDocument(kind string, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("writing JSON output: %w", err)
	}
	body := clip.JSONBidi(bytes.TrimSpace(buf.Bytes()))
	head := `{"apiVersion":"` + OutputAPIVersion + `","kind":"` + kind + `"`
	switch {
	case bytes.Equal(body, []byte("{}")):
		return []byte(head + "}"), nil
	case body[0] == '{':
		return append([]byte(head+","), body[1:]...), nil
	case body[0] == '[':
		return append(append([]byte(head+`,"items":`), body...), '}'), nil
	}
	return nil, fmt.Errorf("writing JSON output: a %s document must be an object or a list, not %.20s", kind, body)
}

// NewTable returns a table for w: boxed and aligned for a person on a TTY; otherwise one line per
// row with cells separated by a tab, no padding and no borders, so cut, awk and diffs of two runs
// see exactly the data.
func NewTable(w io.Writer, isTTY bool) *tablewriter.Table {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		// Cells hold producer- and ledger-sourced text (failure reasons, event IDs, last errors):
		// control characters could move the cursor or recolour a terminal, and a tab or newline
		// would break a plain row, so they are shown escaped.
		tablewriter.WithRowFilter(tw.CellFilter{Global: sanitizeCells}),
	}
	if isTTY {
		// A cell too long for the terminal wraps inside its column instead of wrapping the
		// whole line: an 80-column terminal shows every table without a broken row.
		opts = append(opts, tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Symbols: tw.NewSymbols(tw.StyleLight),
		})), tablewriter.WithMaxWidth(iostreams.Width(w)-1), tablewriter.WithRowAutoWrap(tw.WrapNormal))
	} else {
		opts = append(opts,
			tablewriter.WithRenderer(&plainRenderer{}),
			tablewriter.WithPadding(tw.PaddingNone),
			tablewriter.WithTrimSpace(tw.Off),
			tablewriter.WithHeaderAutoWrap(tw.WrapNone),
			tablewriter.WithRowAutoWrap(tw.WrapNone),
		)
	}
	return tablewriter.NewTable(w, opts...)
}

// ListGap separates the columns of a list table on a terminal.
const ListGap = "  "

// NewListTable is newTable for lists of many rows and columns (jobs, audit entries): on a TTY the
// columns are aligned without borders, which take three columns per cell that a 100-column
// terminal does not have; otherwise the same tab-separated lines.
func NewListTable(w io.Writer, isTTY bool) *tablewriter.Table {
	if !isTTY {
		return NewTable(w, false)
	}
	return tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowFilter(tw.CellFilter{Global: sanitizeCells}),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Left: tw.Empty, Right: ListGap, Overwrite: true}),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
	)
}

func sanitizeCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = clip.Line(c)
	}
	return cells
}

// plainRenderer is the non-TTY table form: header and rows as tab-separated lines, nothing else.
type plainRenderer struct{ w io.Writer }

func (r *plainRenderer) Start(w io.Writer) error { r.w = w; return nil }

func (r *plainRenderer) Header(lines [][]string, _ tw.Formatting) {
	for _, cells := range lines {
		r.line(cells)
	}
}

func (r *plainRenderer) Row(cells []string, _ tw.Formatting) { r.line(cells) }

func (r *plainRenderer) Footer(lines [][]string, _ tw.Formatting) {
	for _, cells := range lines {
		r.line(cells)
	}
}

func (r *plainRenderer) line(cells []string) {
	fmt.Fprintln(r.w, strings.Join(cells, "\t"))
}

func (r *plainRenderer) Line(tw.Formatting) {}

func (r *plainRenderer) Config() tw.Rendition {
	return tw.Rendition{Borders: tw.BorderNone, Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone}}
}

func (r *plainRenderer) Close() error { return nil }

func (r *plainRenderer) Logger(*ll.Logger) {}

// SecondsText shows a duration given in seconds, as --json gives every duration, to the second.
func SecondsText(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// PrintWarning writes "warning: msg" on stderr, on one line for a log or a pipe and folded at
// the terminal's width between words on a terminal, as stdout's text is.
func PrintWarning(ios *iostreams.IOStreams, msg string) {
	line := "warning: " + clip.Line(msg)
	if ios.IsStderrTTY() {
		line = iostreams.Fold(line, iostreams.Width(ios.ErrOut))
	}
	fmt.Fprintln(ios.ErrOut, line)
}
