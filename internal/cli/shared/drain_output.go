package shared

import (
	"fmt"
	"io"

	"github.com/replayctl/replayctl/executor"
)

// PrintDrainResult tells a person what a drain removed from the DLQ and what it kept.
func PrintDrainResult(w io.Writer, res *executor.DrainResult) {
	fmt.Fprintf(w, "drained job %s: %d messages deleted from stream %s, %d already gone; the DLQ now holds what the job did not complete\n",
		res.JobID, res.Deleted, res.Stream, res.AlreadyGone)
}
