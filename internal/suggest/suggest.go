// Package suggest finds the names an operator probably meant when a typed one is unknown: a
// consumer, a job, a verb. It uses the rule cobra uses for verbs, so every "did you mean" in
// replayctl agrees.
package suggest

import (
	"slices"
	"strings"
)

// maxDistance is how many single-character edits a typo may be from the name it stands for.
const maxDistance = 2

// Closest returns the names within maxDistance edits of typed (case-insensitive), or that start
// with it, nearest first and then in alphabetical order; typed itself is never suggested.
func Closest(typed string, names []string) []string {
	type candidate struct {
		name     string
		distance int
	}
	var found []candidate
	lower := strings.ToLower(typed)
	for _, n := range names {
		if n == typed {
			continue
		}
		d := distance(lower, strings.ToLower(n))
		if d <= maxDistance || (len(typed) > 0 && strings.HasPrefix(strings.ToLower(n), lower)) {
			found = append(found, candidate{n, d})
		}
	}
	slices.SortFunc(found, func(a, b candidate) int {
		if a.distance != b.distance {
			return a.distance - b.distance
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(found))
	for i, c := range found {
		out[i] = c.name
	}
	return out
}

// Phrase renders names as "did you mean a or b?", or "" when there are none; at most three.
func Phrase(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(names[:min(3, len(names))], " or ") + "?"
}

// distance is the Levenshtein distance between a and b, counted in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
