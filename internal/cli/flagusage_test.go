package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
)

// pflag reads a `quoted` word in a flag's usage as the name of its value: a switch such as
// execute's --drain would read in --help as a flag that takes one. No usage may quote that way.
func TestNoFlagUsageQuotesAWordWithBackticks(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if strings.Contains(fl.Usage, "`") {
				t.Errorf("%s --%s: usage %q quotes with backticks", c.CommandPath(), fl.Name, fl.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(cmdutil.NewFactory(ios)))
}
