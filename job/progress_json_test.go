package job_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/job"
)

// A duration is seconds in every --json document: the ETA too, and it reads back the same.
func TestProgressGivesItsETAInSeconds(t *testing.T) {
	t.Parallel()
	p := job.Progress{Targets: 10, Remaining: 4, Rate: 2, ETA: 90 * time.Second, State: "publishing"}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"etaSeconds":90`) || strings.Contains(string(data), "etaNanos") || strings.Contains(string(data), `"ETA"`) {
		t.Fatalf("progress JSON %s: want etaSeconds 90 and no other ETA", data)
	}
	var back job.Progress
	if err := json.Unmarshal(data, &back); err != nil || back != p {
		t.Fatalf("read back %+v, %v; want %+v", back, err, p)
	}
}
