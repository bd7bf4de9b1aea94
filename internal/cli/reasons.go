package cli

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// shownReasons is how many failure reasons plan and show list; the manifest keeps them all. A DLQ
// whose reasons carry event data has one reason per event, and 2,000 rows hide the ten that matter.
const shownReasons = 10

// reasonCount is one failure reason with its targets.
type reasonCount struct {
	Reason  string `json:"reason"`
	Targets int64  `json:"targets"`
}

// reasonTop is a failure-reason histogram cut to its largest reasons, with what was left out.
type reasonTop struct {
	Top          []reasonCount `json:"top"`
	OtherReasons int           `json:"otherReasons"`
	OtherTargets int64         `json:"otherTargets"`
}

// topReasons sorts the histogram by count, largest first, then by reason so ties print stably,
// and keeps the first n.
func topReasons(reasons map[string]int64, n int) reasonTop {
	keys := slices.SortedFunc(maps.Keys(reasons), func(a, b string) int {
		return cmp.Or(cmp.Compare(reasons[b], reasons[a]), strings.Compare(a, b))
	})
	top := reasonTop{Top: make([]reasonCount, 0, min(n, len(keys)))}
	for i, k := range keys {
		if i < n {
			top.Top = append(top.Top, reasonCount{Reason: k, Targets: reasons[k]})
			continue
		}
		top.OtherReasons++
		top.OtherTargets += reasons[k]
	}
	return top
}

// reasonRows is the table of the largest reasons, and a last row counting the others.
func reasonRows(reasons map[string]int64) [][]string {
	top := topReasons(reasons, shownReasons)
	rows := make([][]string, 0, len(top.Top)+1)
	for _, r := range top.Top {
		rows = append(rows, []string{r.Reason, strconv.FormatInt(r.Targets, 10)})
	}
	if top.OtherReasons > 0 {
		rows = append(rows, []string{"(" + strconv.Itoa(top.OtherReasons) + " other reasons)", strconv.FormatInt(top.OtherTargets, 10)})
	}
	return rows
}
