package statuscmd

import (
	"fmt"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
)

// printFleet shows which consumer instance does what of the job and what the durable holds, so
// an operator sees a slow or stuck instance.
func printFleet(ios *iostreams.IOStreams, r *executor.StatusReport) error {
	out := ios.Out
	switch {
	case r.Durable != nil:
		d := r.Durable
		fmt.Fprintf(out, "\ndurable %s on %s: %d pending, %d ack pending, %d redelivered, %d pull requests waiting\n",
			clip.Line(d.Name), clip.Line(d.Stream), d.Pending, d.AckPending, d.Redelivered, d.WaitingPulls)
	case r.DurableNote != "":
		fmt.Fprintf(out, "\ndurable: %s\n", clip.Line(r.DurableNote))
	}
	if len(r.Instances) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nconsumer instances (lease owners):")
	t := cmdutil.NewListTable(out, ios.IsStdoutTTY())
	t.Header("OWNER", "COMPLETED", "IN PROGRESS", "LAPSED", "UNCERTAIN", "OLDEST LEASE")
	for _, s := range r.Instances {
		owner := s.Owner
		if owner == "" {
			owner = "(not recorded)"
		}
		oldest := "-"
		if s.InProgress+s.Lapsed > 0 {
			oldest = (time.Duration(s.OldestLeaseSeconds * float64(time.Second))).Round(time.Second).String()
		}
		if err := t.Append(clip.Cell(owner), cmdutil.Count(s.Completed), cmdutil.Count(s.InProgress), cmdutil.Count(s.Lapsed), cmdutil.Count(s.Uncertain), oldest); err != nil {
			return err
		}
	}
	return t.Render()
}
