package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// phase is one timed step.
type phase struct {
	Name    string  `json:"name"`
	Events  int64   `json:"events"`
	Seconds float64 `json:"seconds"`
	// Rate is events per second.
	Rate float64 `json:"eventsPerSecond"`
	// MaxRSSMiB is the peak resident memory of the step's own process; 0 when the step ran
	// inside the benchmark process.
	MaxRSSMiB float64 `json:"maxRssMiB,omitempty"`
	// CPUSeconds is the user+system time of the step's own process, when it had one: how much of
	// the wall time it computed rather than waited on PostgreSQL or NATS.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	Note       string  `json:"note,omitempty"`
}

func timedPhase(name string, events int64, took time.Duration) phase {
	return phase{Name: name, Events: events, Seconds: took.Seconds(), Rate: float64(events) / took.Seconds()}
}

// ratio compares replayctl with a baseline: Value is replayctl's rate over the baseline's.
type ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target float64 `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

// target is an absolute goal of the issue, such as plan time.
type target struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Goal  string `json:"goal"`
	Met   bool   `json:"met"`
}

type results struct {
	Events     int       `json:"events"`
	StartedAt  time.Time `json:"startedAt"`
	CPUs       int       `json:"cpus"`
	NATS       string    `json:"nats"`
	Phases     []phase   `json:"phases"`
	Ratios     []ratio   `json:"ratios"`
	Targets    []target  `json:"targets"`
	Checks     []string  `json:"checks"`
	phaseIndex map[string]int
}

func newResults(events int, natsDesc string) *results {
	return &results{Events: events, StartedAt: time.Now().UTC(), CPUs: runtime.NumCPU(), NATS: natsDesc, phaseIndex: map[string]int{}}
}

// add records p under key, for the ratios.
func (r *results) add(key string, p phase) {
	r.phaseIndex[key] = len(r.Phases)
	r.Phases = append(r.Phases, p)
	// Milliseconds: at 20,000 events the raw scan and join take 0.03-0.15 s, and a ratio over
	// figures rounded to 0.01 s moved by a tenth from rounding alone.
	logf("%s: %d events in %.3f s (%.0f/s)%s", p.Name, p.Events, p.Seconds, p.Rate, rssNote(p.MaxRSSMiB))
}

func (r *results) phase(key string) (phase, bool) {
	i, ok := r.phaseIndex[key]
	if !ok {
		return phase{}, false
	}
	return r.Phases[i], true
}

// compare adds the ratio of the rates of two recorded phases, with a goal when goal > 0.
func (r *results) compare(name, replayctl, baseline string, goal float64) {
	a, okA := r.phase(replayctl)
	b, okB := r.phase(baseline)
	if !okA || !okB || b.Rate == 0 {
		return
	}
	x := ratio{Name: name, Value: a.Rate / b.Rate}
	if goal > 0 {
		met := x.Value >= goal
		x.Target, x.Met = goal, &met
	}
	r.Ratios = append(r.Ratios, x)
}

func (r *results) goal(name, value, goal string, met bool) {
	r.Targets = append(r.Targets, target{Name: name, Value: value, Goal: goal, Met: met})
}

func rssNote(mib float64) string {
	if mib == 0 {
		return ""
	}
	return fmt.Sprintf(", max RSS %.0f MiB", mib)
}

func (r *results) print(w io.Writer) {
	fmt.Fprintf(w, "scalebench: %d events, %d CPUs, NATS %s, %s\n\n", r.Events, r.CPUs, r.NATS, r.StartedAt.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tEVENTS\tSECONDS\tEVENTS/S\tMAX RSS\tCPU\tNOTE")
	for _, p := range r.Phases {
		rss, cpu := "-", "-"
		if p.MaxRSSMiB > 0 {
			rss = fmt.Sprintf("%.0f MiB", p.MaxRSSMiB)
		}
		if p.CPUSeconds > 0 {
			cpu = fmt.Sprintf("%.2f s", p.CPUSeconds)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.0f\t%s\t%s\t%s\n", p.Name, p.Events, p.Seconds, p.Rate, rss, cpu, p.Note)
	}
	tw.Flush()
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w, "\nreplayctl / baseline (rates)")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, x := range r.Ratios {
			verdict := ""
			if x.Met != nil {
				verdict = fmt.Sprintf("target >= %g: %s", x.Target, metWord(*x.Met))
			}
			fmt.Fprintf(tw, "%s\t%.2fx\t%s\n", x.Name, x.Value, verdict)
		}
		tw.Flush()
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, t := range r.Targets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Value, t.Goal, metWord(t.Met))
		}
		tw.Flush()
	}
	if len(r.Checks) > 0 {
		fmt.Fprintf(w, "\nchecks\n  %s\n", strings.Join(r.Checks, "\n  "))
	}
}

func metWord(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}
