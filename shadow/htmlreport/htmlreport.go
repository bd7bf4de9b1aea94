// Package htmlreport renders a shadow report as one self-contained HTML page: people review diffs
// by looking, so the page carries its own CSS and loads nothing (no scripts, fonts or links), and
// can be attached to a ticket or opened offline.
package htmlreport

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"

	"github.com/replayctl/replayctl/internal/atomicfile"
	"github.com/replayctl/replayctl/shadow"
)

//go:embed report.html.tmpl
var pageText string

// html/template escapes every value taken from the report: payload values are untrusted input.
var page = template.Must(template.New("report").Parse(pageText))

// Write renders r to w.
func Write(w io.Writer, r *shadow.Report) error { return page.Execute(w, newView(r)) }

type view struct {
	R       *shadow.Report
	Sampled int
	Reasons []reasonCount
	Fields  []fieldBar
	// Changes groups the sample's changed values: one row per path and pair of values, with the
	// events it happened in ("feeCents 35 -> 36 in 100 events").
	Changes []changeGroup
	// Diffs are the sampled events whose result changed (the totals' "changed"), at most
	// maxCards; NoiseOnly counts the identical ones whose results differ only in noise or ignored
	// fields.
	Diffs     []diffItem
	MoreDiffs int
	NoiseOnly int
}

// maxCards bounds the per-event cards: the grouped changes say the rest.
const maxCards = 20

type changeGroup struct {
	Path, Original, Replay string
	Events                 int
	Example                string
}

type reasonCount struct {
	Reason string
	Count  int
}

// fieldBar is one histogram row; Percent is of the sampled events, so bars compare across reports.
type fieldBar struct {
	Path    string
	Changed int
	Percent int
}

type diffItem struct {
	Item shadow.SampleItem
	Rows []diffRow
}

// diffRow is one field of the side-by-side table. Noise and ignored paths carry no values in the
// report (they were left out of the comparison), so only their kind is shown.
type diffRow struct {
	Path     string
	Original string
	Replay   string
	Kind     string // "changed", "noise" or "ignored"
}

func newView(r *shadow.Report) view {
	v := view{R: r, Sampled: len(r.Sample.Items)}
	for _, k := range slices.Sorted(maps.Keys(r.Sample.PerReason)) {
		v.Reasons = append(v.Reasons, reasonCount{Reason: k, Count: r.Sample.PerReason[k]})
	}
	for _, f := range r.Fields {
		if f.Changed == 0 {
			continue
		}
		pct := 0
		if v.Sampled > 0 {
			pct = f.Changed * 100 / v.Sampled
		}
		v.Fields = append(v.Fields, fieldBar{Path: f.Path, Changed: f.Changed, Percent: pct})
	}
	groups := map[[3]string]*changeGroup{}
	for _, it := range r.Sample.Items {
		for _, c := range it.Changed {
			key := [3]string{c.Path, side(c.Original), side(c.Shadow)}
			g := groups[key]
			if g == nil {
				g = &changeGroup{Path: key[0], Original: key[1], Replay: key[2], Example: it.EventID}
				groups[key] = g
			}
			g.Events++
		}
	}
	for _, g := range groups {
		v.Changes = append(v.Changes, *g)
	}
	slices.SortFunc(v.Changes, func(a, b changeGroup) int {
		return cmp.Or(cmp.Compare(b.Events, a.Events), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Original, b.Original))
	})
	for _, it := range r.Sample.Items {
		if it.Outcome != shadow.OutcomeChanged && !it.EffectsChanged {
			if len(it.Noise) > 0 || len(it.Ignored) > 0 {
				v.NoiseOnly++
			}
			continue
		}
		if len(v.Diffs) == maxCards {
			v.MoreDiffs++
			continue
		}
		d := diffItem{Item: it}
		for _, c := range it.Changed {
			d.Rows = append(d.Rows, diffRow{Path: c.Path, Original: side(c.Original), Replay: side(c.Shadow), Kind: "changed"})
		}
		for _, p := range it.Noise {
			d.Rows = append(d.Rows, diffRow{Path: p, Kind: "noise"})
		}
		for _, p := range it.Ignored {
			d.Rows = append(d.Rows, diffRow{Path: p, Kind: "ignored"})
		}
		v.Diffs = append(v.Diffs, d)
	}
	return v
}

// side writes a missing value as a dash, so "absent" is not confused with an empty string.
func side(raw []byte) string {
	if len(raw) == 0 {
		return "—"
	}
	return string(raw)
}

// WriteFile atomically replaces path with the page, mode 0600 like the JSON report: it shows
// result values, which may hold personal data.
func WriteFile(path string, r *shadow.Report) error {
	if err := atomicfile.Write(path, 0o600, func(w io.Writer) error { return Write(w, r) }); err != nil {
		return fmt.Errorf("write HTML shadow report %s: %w", path, err)
	}
	return nil
}
