package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points natscli's configuration directory at an empty one, so a context selected on the
// machine (`nats context select`) never changes which server or credentials a test uses (the
// context tests set their own), and forgets the shell's $COLUMNS.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replayctl-cli-test-xdg")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	// Terminal output is drawn at iostreams.DefaultWidth in the tests, whatever the shell's width.
	os.Unsetenv("COLUMNS")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
