package plancmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/planner"
)

// readIDs reads --FLAG FILE: one event ID a line, blank lines and # comments skipped, "-" for
// stdin. An empty path means the flag was not given (nil); a file without an ID is an empty list,
// which the planner refuses.
func readIDs(ios *iostreams.IOStreams, flag, path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	var r io.Reader = ios.In
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--%s %s: %v", flag, path, err)
		}
		defer f.Close()
		r = f
	}
	ids := []string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return ids, nil
}

// manifestPath is where the plan wrote its manifest; a dry run wrote none.
func manifestPath(res *planner.Result, path string) string {
	if res.DryRun {
		return ""
	}
	return path
}
