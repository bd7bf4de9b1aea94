package cmdutil

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ShownReasons is how many failure reasons plan and show list; the manifest keeps them all. A DLQ
// whose reasons carry event data has one reason per event, and 2,000 rows hide the ten that matter.
const ShownReasons = 10

// ReasonCount is one failure reason with its targets.
type ReasonCount struct {
	Reason  string `json:"reason"`
	Targets int64  `json:"targets"`
}

// ReasonTop is a failure-reason histogram cut to its largest reasons, with what was left out.
type ReasonTop struct {
	Top          []ReasonCount `json:"top"`
	OtherReasons int           `json:"otherReasons"`
	OtherTargets int64         `json:"otherTargets"`
}

// TopReasons sorts the histogram by count, largest first, then by reason so ties print stably,
// and keeps the first n.
func TopReasons(reasons map[string]int64, n int) ReasonTop {
	keys := slices.SortedFunc(maps.Keys(reasons), func(a, b string) int {
		return cmp.Or(cmp.Compare(reasons[b], reasons[a]), strings.Compare(a, b))
	})
	top := ReasonTop{Top: make([]ReasonCount, 0, min(n, len(keys)))}
	for i, k := range keys {
		if i < n {
			top.Top = append(top.Top, ReasonCount{Reason: k, Targets: reasons[k]})
			continue
		}
		top.OtherReasons++
		top.OtherTargets += reasons[k]
	}
	return top
}

// ReasonRows is the table of the largest reasons, and a last row counting the others.
func ReasonRows(reasons map[string]int64) [][]string {
	top := TopReasons(reasons, ShownReasons)
	rows := make([][]string, 0, len(top.Top)+1)
	for _, r := range top.Top {
		rows = append(rows, []string{r.Reason, strconv.FormatInt(r.Targets, 10)})
	}
	if top.OtherReasons > 0 {
		rows = append(rows, []string{"(" + strconv.Itoa(top.OtherReasons) + " other reasons)", strconv.FormatInt(top.OtherTargets, 10)})
	}
	return rows
}
