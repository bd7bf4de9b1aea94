package cmdutil

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Count writes n for a table cell; plain digits, so scripts can read the non-TTY form.
func Count(n int64) string { return strconv.FormatInt(n, 10) }

// JoinCounts writes a small histogram as "changed 12, identical 88", keys sorted.
func JoinCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// Dash is s, or "-" for an empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ColumnsWidth is how wide the first len(header) columns of a list table are on a terminal, gaps
// included.
func ColumnsWidth(header []string, rows [][]string) int {
	total := 0
	for i, h := range header {
		w := utf8.RuneCountInString(h)
		for _, r := range rows {
			w = max(w, utf8.RuneCountInString(r[i]))
		}
		total += w + len(ListGap)
	}
	return total
}

// PaceRate renders a job's pace rate: unset, 0 (no limit), or N/s.
func PaceRate(v *float64) string {
	switch {
	case v == nil:
		return "unset"
	case *v == 0:
		return "0 (no limit)"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64) + "/s"
}

// PaceInFlight renders a job's in-flight cap, or unset.
func PaceInFlight(v *int) string {
	if v == nil {
		return "unset"
	}
	return strconv.Itoa(*v)
}

// MaxPruneBatchSize keeps one batch a short transaction: row locks and WAL of a million rows at
// once are what batching exists to avoid.
const MaxPruneBatchSize = 1_000_000

// Or is s, or fallback when s is empty.
func Or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// FitColumns drops columns of a list table, in the order of drop (indexes into header), until
// its columns fit width with their gaps; it returns the header and rows kept.
func FitColumns(header []string, rows [][]string, width int, drop ...int) ([]string, [][]string) {
	gone := map[int]bool{}
	fits := func() bool {
		var h []string
		var rs [][]string
		h, rs = keepColumns(header, rows, gone)
		return ColumnsWidth(h, rs) <= width
	}
	for _, i := range drop {
		if fits() {
			break
		}
		gone[i] = true
	}
	return keepColumns(header, rows, gone)
}

func keepColumns(header []string, rows [][]string, gone map[int]bool) ([]string, [][]string) {
	var h []string
	for i, c := range header {
		if !gone[i] {
			h = append(h, c)
		}
	}
	rs := make([][]string, len(rows))
	for r, row := range rows {
		for i, c := range row {
			if !gone[i] {
				rs[r] = append(rs[r], c)
			}
		}
	}
	return h, rs
}
