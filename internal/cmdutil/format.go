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

func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JobsWidth is the terminal width the jobs table is cut to fit.
const JobsWidth = 100

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

func PaceRate(v *float64) string {
	switch {
	case v == nil:
		return "unset"
	case *v == 0:
		return "0 (no limit)"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64) + "/s"
}

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
