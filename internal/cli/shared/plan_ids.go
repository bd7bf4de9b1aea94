package shared

import (
	"bufio"
	"errors"
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
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, cmdutil.UsageErrorf("--%s %s: is a directory; give a file of event IDs, one a line (or - for stdin)", flag, path)
		}
		r = f
	}
	ids := []string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxIDLine)
	lines := 0
	for sc.Scan() {
		lines++
		text := sc.Text()
		if lines == 1 {
			// A file saved by a Windows editor starts with a byte order mark: it is no part of the
			// first ID.
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		line := strings.TrimSpace(text)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, cmdutil.UsageErrorf("--%s %s: line %d is longer than %d bytes; give one event ID a line (is this a binary file or a JSON document?)",
				flag, path, lines+1, maxIDLine)
		}
		return nil, fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return ids, nil
}

// maxIDLine bounds a line of an ID file: an event ID is at most a few hundred bytes.
const maxIDLine = 1 << 20

// manifestPath is where the plan wrote its manifest; a dry run wrote none.
func manifestPath(res *planner.Result, path string) string {
	if res.DryRun {
		return ""
	}
	return path
}
